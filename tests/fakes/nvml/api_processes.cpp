// nvmlDeviceGetComputeRunningProcesses_v3 (fake_processes.hpp): the live processes holding memory on
// a GPU, with NVML's rules: INSUFFICIENT_SIZE (and the count needed) when the array is short or
// null while processes run; a MIG device handle has none (not modelled).
#include "fake_entry.hpp"
#include "fake_processes.hpp"

using namespace gpufrac::fake_nvml;

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                                      nvmlProcessInfo_t* infos) {
  return with_state([&](State& s) -> nvmlReturn_t {
    nvmlDevice_st* d = find_device(s, device);
    if (!d || !count) return NVML_ERROR_INVALID_ARGUMENT;
    const auto procs = d->mig ? std::vector<GpuProcess>{} : gpu_processes(s, d->gpu->model.uuid);
    const unsigned int room = *count;
    *count = static_cast<unsigned int>(procs.size());
    if (procs.empty()) return NVML_SUCCESS;
    if (!infos || room < procs.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
    for (std::size_t i = 0; i < procs.size(); ++i)
      infos[i] = nvmlProcessInfo_t{procs[i].pid, procs[i].used, 0xFFFFFFFFu, 0xFFFFFFFFu};
    return NVML_SUCCESS;
  });
}
