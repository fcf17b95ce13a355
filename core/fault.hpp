// Fault injection for crash tests: with GPUFRAC_FAULT=<point> in the environment, the process
// kills itself with SIGKILL when it reaches that point, the way a hook killed by its runtime would
// die; GPUFRAC_FAULT=<point>@<n> when it reaches it the n-th time (the provisioner takes the ledger
// lock several times). Points: ledger-after-lock, ledger-after-temp-write, ledger-before-rename,
// ledger-between-gpus (a multi-GPU share: its first GPU's entry added to the new content, not the rest),
// dra-after-book (gpufrac-dra: a claim booked, its CDI spec not written, its checkpoint entry
// still `started`), mig-after-gi and mig-after-ci (nvml/mig_steps.hpp), driver-limit-after-record
// and driver-limit-after-set (`gpufrac driver-limit set`: the limit recorded in the ledger, not yet
// set / set), hook-after-driver-limit (gpufrac-hook: the limit set and booked, the container's files
// not yet written), mps-after-record, mps-after-mode, mps-after-start, mps-stop-after-quit and
// mps-stop-after-mode (an MPS daemon's start and stop: nvml/mps_keeper.hpp), swap-after-lock,
// swap-after-checkpoint, swap-before-restore and swap-after-restore (the burst reclaimer's swap:
// reclaim/reclaim_swap.cpp; the keeper it starts does not inherit the fault).
#pragma once

#include <string_view>

namespace gpufrac::fault {

inline constexpr const char* kEnv = "GPUFRAC_FAULT";

// raise(SIGKILL) when $GPUFRAC_FAULT names this point (and this is the n-th time); otherwise nothing.
void point(std::string_view point);

}  // namespace gpufrac::fault
