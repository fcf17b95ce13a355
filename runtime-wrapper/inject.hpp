// The wrapper's create path: from a bundle whose config.json asks for a GPU to a spec that gives
// the container its share. Order: fast scan, parse, never twice, request (refusal: nothing booked),
// host-PID policy, pending booking(s) in the ledger (source wrapper, pid 0: the createRuntime hook
// added here attaches the pid), the container's files, the planner's Edits plus the attach and
// release hooks rendered into the spec, config.json replaced atomically with its mode kept. A
// failure after booking releases the container's bookings and removes its files.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "metrics/counter_file.hpp"
#include "runtime-wrapper/argv.hpp"

namespace gpufrac::wrapper {

// What inject() changed, so that a runtime that cannot be started undoes it.
struct Injection {
  bool changed = false;  // false: config.json was left as it was (no request, or already prepared)
  std::string container_id;
  std::string config_path;
  std::string original;  // config.json before
  mode_t mode = 0644;
  // LedgerEntry::instance of this create ("w<hex>"), passed to its hooks; set once booking starts,
  // so every booking under it is this call's own.
  std::string instance;
};

// Where the create's config.json is: --config/-f (crun) or config.json, in --bundle or cwd.
std::string spec_path(const RuntimeArgs& args, const std::string& cwd);

// A refusal also says why in `why` (for the refusal counters, metrics/counter_file.hpp); `asked` is
// set once the spec is known to ask gpufrac for something.
struct InjectOutcome {
  bool asked = false;
  metrics::Refusal why = metrics::Refusal::other;
};
Result<Injection> inject(const RuntimeArgs& args, const std::string& cwd, const Config& cfg,
                         InjectOutcome* outcome = nullptr);

// Puts config.json back and, when this call booked (injection.instance is set), releases that
// instance's bookings and removes its files (best effort).
void undo(const Injection& injection, const Config& cfg);

}  // namespace gpufrac::wrapper
