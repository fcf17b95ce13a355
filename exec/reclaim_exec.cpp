#include "exec/reclaim_exec.hpp"

#include <algorithm>

#include "core/log.hpp"
#include "exec/cli_exec.hpp"

namespace gpufrac {

bool wants_reclaimer(const std::vector<LedgerEntry>& bookings) {
  return std::any_of(bookings.begin(), bookings.end(), [](const LedgerEntry& e) { return e.limit_bytes != 0; });
}

void start_reclaimer(const Config& cfg) {
  auto out = run_cli(cfg, {cfg.cli_path, "reclaim", "start"});
  if (!out) log::warn("reclaim: " + out.error().message + "; shares with a burst limit borrow nothing meanwhile");
}

}  // namespace gpufrac
