// The hook's booking step: which request (annotations or a CDI device name), the ledger
// reservation, and the Edits to apply for the container's bookings.
#pragma once

#include <vector>

#include "bundle/oci.hpp"
#include "core/config/config.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/plan/edits.hpp"
#include "hook/flow.hpp"

namespace gpufrac::hook {

struct Invocation {
  const HookArgs& args;
  bundle::OciState state;
  bundle::BundleSpec spec;
  Config cfg;
  Inventory inventory;       // filled by book()
  bool with_driver = false;  // set by edits_for: gpufrac mounts the driver's files itself
  std::string instance;      // set by identify(): --instance, else process_instance(pid, start)
  std::uint64_t pid_start = 0;
  // The name of the instance's directory under <state-dir>/containers.
  std::string key() const { return container_key(state.id, instance); }
};

// Which instance of the container this is (one id can name several containers at once): the
// wrapper's --instance, else the container process's pid and start time.
Result<> identify(Invocation& inv);

// Reserves (idempotently) and returns every booking the container now has; empty when the
// annotations hold only alias keys and aliases are off.
Result<std::vector<LedgerEntry>> book(Invocation& inv);
// The wrapper's createRuntime hook: give the container's pending bookings their pid; returns them.
Result<std::vector<LedgerEntry>> attach_pid(const Invocation& inv);
// What to apply in the namespace: everything for annotation requests (the driver's files when
// injects_driver says so); for CDI devices gpufrac's directory (plan_gpufrac_dir: the tmpfs with the
// shim, limits, usage and the compute arbiters of the container's shares that have one; the CDI spec
// carries the rest). Refuses a spec holding a GPU node gpufrac did not grant.
Result<Edits> edits_for(Invocation& inv, const std::vector<LedgerEntry>& bookings);
// The grants the bookings stand for (grant_of each).
std::vector<Grant> grants_of(const std::vector<LedgerEntry>& bookings);
// gpufrac's directory for a container whose bookings a front-end made (the wrapper's --attach: the
// instance's pending bookings; a DRA claim's --claim: the claim's): the tmpfs, the shim, the files of
// `container_id@instance` and the compute arbiters of its shares.
Result<Edits> gpufrac_dir_edits(const Config& cfg, const std::string& container_id, const std::string& instance);

}  // namespace gpufrac::hook
