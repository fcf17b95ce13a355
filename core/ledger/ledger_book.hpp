// Internal to the ledger (ledger.cpp): one reservation's decision on the content read under the
// lock. Pure but for the entries it adds or completes in `state`.
#pragma once

#include <cstdint>

#include "core/ledger/ledger.hpp"
#include "core/mig/mig_fit.hpp"

namespace gpufrac::ledger_detail {

// The entry a grant becomes for these arguments, under `device_key`.
LedgerEntry entry_for(const ReserveArgs& a, const std::string& device_key, const Grant& g, std::uint64_t pid_start,
                      std::int64_t now);

// Who asks, for the one-compute-instance-per-GPU-instance rule.
MigHolder holder_of(const ReserveArgs& a);

// Finds the booking of (container id, instance, device key) (for a multi-GPU share, the entry of
// each of its GPUs, keyed gpus_device_key) or allocates a new one in `state`: every GPU of the
// request in one go, all or none. The same key asked with another request is refused; a pending
// booking asked with a pid gets it (`changed`).
Result<Booking> book(LedgerState& state, const ReserveArgs& a, std::uint64_t start, const Inventory& inv,
                     const AllocationConfig& cfg, const MigConfig& mig, std::int64_t now, bool& changed);

}  // namespace gpufrac::ledger_detail
