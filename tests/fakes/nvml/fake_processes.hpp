// The driver's per-process view of GPU memory (nvmlDeviceGetComputeRunningProcesses_v3), as the fake
// keeps it: the fake libcuda.so.1 records what each process holds in "<state file>.usage/<pid>"
// (tests/fakes/cuda/drvlimit.h); a process that exited, is a zombie, or whose pid now names another
// process (another start time) holds nothing. Without GPUFRAC_FAKE_NVML_STATE there are none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fake_state.hpp"

namespace gpufrac::fake_nvml {

struct GpuProcess {
  unsigned int pid = 0;
  std::uint64_t used = 0;  // bytes on the GPU asked about
};

// The live processes holding memory on `gpu_uuid`, by pid.
std::vector<GpuProcess> gpu_processes(const State& state, const std::string& gpu_uuid);

}  // namespace gpufrac::fake_nvml
