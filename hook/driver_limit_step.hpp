// The hook's driver-limit step (docs/architecture.md "Driver-enforced memory limits"): at
// createRuntime, after the booking and before the container's files and mounts (so before its
// process runs anything), the driver's per-cgroup memory limits of the container's shares are set
// through `<cli.path> driver-limit set` (this static binary never loads NVML). Annotation and CDI
// requests decide from the inventory they booked with; gpufrac-runtime's attach hook and a claim's
// hook are told by `--driver-limit` (the wrapper and gpufrac-dra decided when they wrote the spec).
#pragma once

#include <vector>

#include "core/error.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "hook/booking.hpp"

namespace gpufrac::hook {

// The container's bookings (annotation or CDI request): the limits they call for, if any, after
// NVIDIA_GPU_MEMORY_LIMIT/REQUEST in its environment were found to agree with them
// (core/enforcement/nvidia_memory_env.hpp). Crash point hook-after-driver-limit (core/fault.hpp) once set.
Result<> set_driver_limits(const Invocation& inv, const std::vector<LedgerEntry>& bookings);
// `--driver-limit`: the wrapper's instance or the claim (--claim) has limits to set.
Result<> set_told_driver_limits(const Invocation& inv);

}  // namespace gpufrac::hook
