// What no shim following the arbiter's protocol writes into a GPU's lease file (gpufrac/arbiter_abi.h):
// the host's checks that tell `gpufrac status` and the metrics a tenant tampered with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpufrac/arbiter_abi.h"

namespace gpufrac::limits {

// One line per rule the lease file breaks at now_ns (CLOCK_MONOTONIC), judged against the slots file
// (which containers cannot write): its header, the holder and the preemption request (a slot that
// exists and, for preemption, is high priority), the deadline and the announced end of a busy holder
// (no farther ahead than a process puts them), and the charges (no second of history holds more than
// a holder can be charged in it; the window of all slots together no more than the time that passed
// plus one overrun). Empty when it keeps them all.
// lanes: every slot's lane (GPUFRAC_ARBITER_SLOTS of them, indexed by slot: limits/host/arbiter_lanes.hpp).
std::vector<std::string> lease_file_problems(const gpufrac_arbiter_slots& slots, const gpufrac_arbiter& lease,
                                             const gpufrac_arbiter_lane* lanes, std::uint64_t now_ns);

}  // namespace gpufrac::limits
