/* The fake libcuda's MPS client (mps.c; README.md "MPS"), talking to the fake control daemon of the
 * simulated driver tree (tests/fakes/driver/fake_mps.h) as a real client talks to NVIDIA's:
 *  - at cuInit it connects to CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps). No daemon: the
 *    process runs without MPS, as a real one does. A server in FAULT: cuInit fails with
 *    CUDA_ERROR_MPS_SERVER_NOT_READY; a server whose shared memory (/dev/shm/cuda.shm.<server pid>)
 *    the process cannot see: CUDA_ERROR_MPS_CONNECTION_FAILED.
 *  - connected, its device (the server's GPU) runs the process's kernels as an MPS client capped at
 *    min(the server's active thread percentage, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): the client
 *    variable can only lower it (fake_gpu_client_mps, the simulated GPU's engine: fake_cuda.h).
 *  - allocations past the pinned limit (the server's, lowered by CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
 *    "<ordinal or UUID>=<n>[M|G][B],...") fail with CUDA_ERROR_OUT_OF_MEMORY, below every
 *    allocation call, so a static binary (fake_cuda_static) is held to it too.
 *  - a fatal fault reported by any client of the server (GPUFRAC_FAKE_CUDA_MPS_FAULT=<n>: this
 *    process's n-th launch faults) makes every launch of every client connected then return
 *    CUDA_ERROR_ILLEGAL_ADDRESS from then on (sticky), as MPS reports one client's fatal fault to all.
 *  - not a client, on a GPU whose compute mode (the fake NVML's <GPUFRAC_FAKE_NVML_STATE>.compute-mode)
 *    is EXCLUSIVE_PROCESS: a context is refused with CUDA_ERROR_DEVICE_UNAVAILABLE while another live
 *    process holds the GPU (<state>.exclusive/<uuid>: the MPS server, or the first process);
 *    PROHIBITED refuses every context. */
#ifndef GPUFRAC_FAKE_CUDA_MPS_H
#define GPUFRAC_FAKE_CUDA_MPS_H

#include <stdint.h>

#include "cuda.h"

/* After the devices are known (cuInit): connects to the daemon if there is one. */
CUresult fake_mps_init(void);
/* Before a context on dev is created (cuCtxCreate, primary context retain). */
CUresult fake_mps_context(CUdevice dev);
/* Before `size` more bytes on dev, holding `used`: CUDA_ERROR_OUT_OF_MEMORY past the pinned limit. */
CUresult fake_mps_charge(CUdevice dev, uint64_t used, uint64_t size);
/* Before each launch: the sticky error of a faulted server, and the fault this process injects. */
CUresult fake_mps_launch(void);

#endif /* GPUFRAC_FAKE_CUDA_MPS_H */
