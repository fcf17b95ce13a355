// The ledger's driver limits (version 5; docs/architecture.md "Driver-enforced memory limits"): pure
// edits of a LedgerState, applied under the ledger's lock. A booking's limit is recorded in its
// entry before the driver is asked to set it; a booking that leaves the ledger by any way (release,
// poststop, rollback, a reclaim of a dead or expired booking) leaves its limit in limits_to_clear,
// so no limit the driver may hold is ever forgotten: `gpufrac driver-limit clear` (poststop, a
// refused start) and gc clear those and drop the records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

// Adds the driver limits of `removed` to limits_to_clear (one record per GPU and cgroup; one a
// remaining entry still holds is not recorded: that booking's release clears it).
void record_limits_to_clear(LedgerState& state, const std::vector<LedgerEntry>& removed, std::int64_t now);

// Whether an entry of `state` holds a driver limit on this GPU and cgroup.
bool limit_held(const LedgerState& state, const std::string& gpu_uuid, const std::string& cgroup);

// Removes the record of one GPU and cgroup; false when there was none.
bool drop_limit_to_clear(LedgerState& state, const std::string& gpu_uuid, const std::string& cgroup);

}  // namespace gpufrac
