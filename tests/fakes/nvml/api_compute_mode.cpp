// The compute mode (fake_compute_mode.hpp): read by anyone, set by root, never on a MIG device.
#include <unistd.h>

#include "fake_compute_mode.hpp"
#include "fake_entry.hpp"
#include "fake_memory_limits.hpp"

using namespace gpufrac::fake_nvml;

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode) {
  return with_state([&](State& s) -> nvmlReturn_t {
    nvmlDevice_st* d = find_device(s, device);
    if (!d || !mode) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t code = injected_code("nvmlDeviceGetComputeMode"); code != NVML_SUCCESS) return code;
    auto modes = load_compute_modes(s);
    if (!modes) return file_failure(modes.error());
    auto it = modes->find(d->gpu->model.uuid);
    *mode = it == modes->end() ? NVML_COMPUTEMODE_DEFAULT : it->second;
    return NVML_SUCCESS;
  });
}

static nvmlReturn_t set_checks(State& s, nvmlDevice_t device, nvmlComputeMode_t mode) {
  nvmlDevice_st* d = find_device(s, device);
  if (!d) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t code = injected_code("nvmlDeviceSetComputeMode"); code != NVML_SUCCESS) return code;
  if (d->mig) return NVML_ERROR_NOT_SUPPORTED;
  if (mode == NVML_COMPUTEMODE_EXCLUSIVE_THREAD) return NVML_ERROR_NOT_SUPPORTED;
  if (mode > NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) return NVML_ERROR_INVALID_ARGUMENT;
  if (::geteuid() != 0) return NVML_ERROR_NO_PERMISSION;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode) {
  if (::geteuid() != 0)  // refused before the state file (root's) would be locked
    return with_state([&](State& s) { return set_checks(s, device, mode); });
  return with_state_change([&](State& s) -> nvmlReturn_t {
    if (nvmlReturn_t rc = set_checks(s, device, mode); rc != NVML_SUCCESS) return rc;
    auto modes = load_compute_modes(s);
    if (!modes) return file_failure(modes.error());
    (*modes)[find_device(s, device)->gpu->model.uuid] = mode;
    if (auto r = save_compute_modes(s, *modes); !r) return file_failure(r.error());
    return NVML_SUCCESS;
  });
}
