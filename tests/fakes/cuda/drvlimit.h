/* The driver's per-cgroup device-memory limits (r615) as the fake libcuda enforces them: the
 * limits the fake libnvidia-ml.so.1 sets (nvmlDeviceSetMemoryLimits_v1) live beside its shared
 * state file, GPUFRAC_FAKE_NVML_STATE=<file> (tests/fakes/nvml/fake_memory_limits.hpp): one line
 * "<GPU uuid> <soft> <hard> <cgroup>" per limit in "<file>.limits". A process whose
 * /proc/self/cgroup "0::" path has a limit on a device's UUID is held to it with every process of
 * its cgroup: an allocation past the hard limit is CUDA_ERROR_OUT_OF_MEMORY, and cuMemGetInfo
 * reports the hard limit as the total. Each such process keeps what it holds in
 * "<file>.usage/<pid>" (the fake NVML's currentUsed sums the live ones). All of it under
 * flock(<file>.lock), as the fake NVML's changes are. Without the variable nothing is limited. */
#ifndef GPUFRAC_FAKE_CUDA_DRVLIMIT_H
#define GPUFRAC_FAKE_CUDA_DRVLIMIT_H

#include <stdint.h>

#include "cuda.h"

/* Before `size` more bytes on dev (holding `held` now): CUDA_ERROR_OUT_OF_MEMORY when the cgroup's
 * hard limit would be passed; else CUDA_SUCCESS, with held + size recorded for the cgroup. */
CUresult fake_limit_charge(CUdevice dev, uint64_t held, uint64_t size);
/* After a free: the process now holds `held` bytes on dev. */
void fake_limit_release(CUdevice dev, uint64_t held);
/* The cgroup's hard limit on dev and what its processes hold (this one's `held` included);
 * 0 when no limit applies. */
int fake_limit_info(CUdevice dev, uint64_t held, uint64_t* hard, uint64_t* used);

#endif /* GPUFRAC_FAKE_CUDA_DRVLIMIT_H */
