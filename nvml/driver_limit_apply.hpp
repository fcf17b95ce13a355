// Setting and clearing the driver's per-cgroup memory limits of bookings (docs/architecture.md
// "Driver-enforced memory limits"). `gpufrac driver-limit set|clear` runs these for the static
// front-ends (which never load NVML), gpufrac gc and gpufrac-dra call them in process.
//
// Set, for a container instance (or a claim) whose process exists:
//  1. the plan (core/enforcement/enforcement.hpp) from the inventory cache, the node's cgroup layout and the
//     bookings that have no limit yet, on the cgroup of <proc-root>/<pid>/cgroup's "0::" line (a
//     claim: its parent, the pod's cgroup, shared by the pod's containers as the claim is);
//  2. under flock(<state-dir>/driver-limits.lock): each limit recorded in its ledger entry first
//     (crash point driver-limit-after-record), then set through NVML (driver-limit-after-set);
//  3. a failure clears what this call set and drops the records, and is one line; where the call
//     is absent (an older driver) under enforcement: auto, the records are dropped and the shim
//     alone holds the shares (not an error).
// A process killed after 2 leaves the records; the booking's release (poststop) or its reclaim
// (gc, or any ledger update once the process is dead) moves them to limits_to_clear.
//
// Clear: every record in limits_to_clear, under the same lock: dropped without a call when a
// booking holds a limit on the same GPU and cgroup again (a new container with the same cgroup
// path: its limit stays), else cleared (soft 0, then hard MAX) and dropped. A cgroup directory the
// runtime removed already (poststop runs after runc deleted the cgroup) is made again for the
// calls and removed after: the driver needs the path, and a limit left uncleared keeps the
// ancestors' dmem.min raised. A record whose clear fails stays for the next clear or gc.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/enforcement/enforcement.hpp"
#include "core/error.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

struct LimitTarget {
  std::string container_id;  // the claim's uid for a claim
  std::string instance;      // "" for a claim
  bool claim = false;
  pid_t pid = 0;
};

struct AppliedLimits {
  std::vector<PlannedLimit> set;  // empty: nothing for the driver (the shim alone)
  std::string note;               // why nothing was set, when the driver path was considered
};

Result<AppliedLimits> apply_driver_limits(const Config& cfg, const LimitTarget& target);

struct ClearReport {
  std::vector<LimitToClear> cleared;  // cleared through the driver, records dropped
  std::vector<LimitToClear> dropped;  // held again by a booking: dropped without a call
  std::vector<std::string> errors;    // records kept (one line each)
};

// No record: nothing is opened, nothing locked.
Result<ClearReport> clear_driver_limits(const Config& cfg);

// <state-dir>/driver-limits.lock
std::string driver_limits_lock_path(const Config& cfg);

}  // namespace gpufrac
