// The driver's per-cgroup memory limits from the static front-ends (gpufrac-hook, gpufrac-runtime's
// hooks), which never load NVML: whether a container's bookings call for them (pure: the inventory
// cache, the config and the node's cgroup layout; a node without the feature pays one look at the
// inventory, no helper), and `<cli.path> driver-limit set|clear` run as exec/cli_exec.hpp runs
// helpers (docs/architecture.md "Driver-enforced memory limits").
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

struct LimitCall {
  std::string container_id;  // or the claim's uid, with claim set
  std::string instance;
  bool claim = false;
  pid_t pid = 0;
};

// Whether `driver-limit set` has work for these bookings: a share the driver would hold that has no
// limit yet. Under enforcement: driver, a share it cannot hold is the refusal (nothing is set).
Result<bool> driver_limits_wanted(const std::vector<LedgerEntry>& bookings, const Inventory& inv, const Config& cfg);

std::vector<std::string> driver_limit_set_argv(const Config& cfg, const LimitCall& call);
// Runs `driver-limit set`; its answer goes to the log.
Result<> run_driver_limit_set(const Config& cfg, const LimitCall& call);
// Runs `driver-limit clear` when one of `released` held a limit (else nothing). A failure is a
// warning in the log: the records stay in the ledger for gc.
void clear_released_limits(const Config& cfg, const std::vector<LedgerEntry>& released);

}  // namespace gpufrac
