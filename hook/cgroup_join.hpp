// A container joining the cgroup of a share that may borrow (docs/architecture.md "Burstable
// memory"): the reclaimer tells shares' processes apart by their cgroups alone, so a loan taken
// while the borrower was alone in its cgroup could no longer be taken back once a second share
// joined it, and the newcomer could fail within its request. Such a container is refused at
// booking time, before anything is written for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac::hook {

// Refuses (one line naming linux.cgroupsPath) when `pid`'s cgroups, as the kernel states them, are
// those of a live share with a burst limit (a booking process's, or a claim's container's) on a GPU
// of `bookings` other than the container's own (`own_key`).
Result<> check_cgroup_join(const Config& cfg, std::int64_t pid, const std::string& own_key,
                           const std::vector<LedgerEntry>& bookings);

}  // namespace gpufrac::hook
