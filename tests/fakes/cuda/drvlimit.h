/* The GPU's memory as the driver holds it for every process of the host, and its per-cgroup
 * device-memory limits (r615), as the fake libcuda enforces them. Both need
 * GPUFRAC_FAKE_NVML_STATE=<file> (and the file's directory visible, e.g. bound into a container);
 * without it each process has a GPU of its own and nothing is limited.
 *   - Per-process use: each process keeps what it holds on each device in "<file>.usage/<name>"
 *     (its pid, or "<pid>@<namespace inode>" in a private PID namespace: procname.h)
 *     ("start <ticks>", "cgroup <0:: path>", "used <uuid> <bytes>" lines): the driver's
 *     per-process view, which the fake NVML's nvmlDeviceGetComputeRunningProcesses reports and its
 *     currentUsed sums. A process that exited (or is a zombie, or whose pid was reused: the start
 *     time differs; in another namespace: its ".live" lock is free) holds nothing.
 *   - The GPU is shared: an allocation that would take the live processes of the host past the
 *     device's total memory is CUDA_ERROR_OUT_OF_MEMORY, and cuMemGetInfo reports the GPU's free
 *     memory (so one container's burst leaves less for the others, as on a real GPU).
 *   - Limits: those the fake libnvidia-ml.so.1 sets (nvmlDeviceSetMemoryLimits_v1), one line
 *     "<GPU uuid> <soft> <hard> <cgroup>" per limit in "<file>.limits". A process whose
 *     /proc/self/cgroup "0::" path has a limit on a device's UUID is held to it with every process
 *     of its cgroup: an allocation past the hard limit is CUDA_ERROR_OUT_OF_MEMORY, and cuMemGetInfo
 *     reports the hard limit as the total.
 *   - Eviction (r615 under MPS; GPUFRAC_FAKE_CUDA_MPS_EVICTION=1 in the requester's environment): an
 *     allocation that finds the GPU full while its cgroup stays within its soft limit has the
 *     largest process of the cgroup furthest past its own soft limit (soft 0 without a limit)
 *     killed (SIGKILL, as the MPS server terminates an over-soft client), waits until it holds
 *     nothing, and tries again; without a process past its soft limit, CUDA_ERROR_OUT_OF_MEMORY.
 * All of it under flock(<file>.lock), as the fake NVML's changes are (the kill and the wait outside). */
#ifndef GPUFRAC_FAKE_CUDA_DRVLIMIT_H
#define GPUFRAC_FAKE_CUDA_DRVLIMIT_H

#include <stdint.h>

#include "cuda.h"

/* Before `size` more bytes on dev (holding `held` now): CUDA_ERROR_OUT_OF_MEMORY when the cgroup's
 * hard limit or the GPU's memory would be passed; else CUDA_SUCCESS, with held + size recorded. */
CUresult fake_limit_charge(CUdevice dev, uint64_t held, uint64_t size);
/* After a free: the process now holds `held` bytes on dev. */
void fake_limit_release(CUdevice dev, uint64_t held);
/* What cuMemGetInfo shows, this process holding `held`: the total (the cgroup's hard limit when it
 * is below the device's memory) and the part of it not free (free = min(limit - the cgroup's use,
 * total - the GPU's use)); 0 without the shared state. */
int fake_limit_info(CUdevice dev, uint64_t held, uint64_t* hard, uint64_t* used);

/* A checkpoint (ckpt.h): the driver's per-process view of this process drops to 0 on every device
 * (its allocations stay in its registry), until fake_limit_swap_in. */
void fake_limit_swap_out(void);
/* A restore: CUDA_ERROR_OUT_OF_MEMORY (nothing changed) when what the process holds on a device no
 * longer fits in the GPU's memory or its cgroup's hard limit; else its use is recorded again. */
CUresult fake_limit_swap_in(void);
/* Field 22 of /proc/<pid>/stat, 0 when the process is gone or a zombie. */
unsigned long long fake_start_time(const char* pid);

#endif /* GPUFRAC_FAKE_CUDA_DRVLIMIT_H */
