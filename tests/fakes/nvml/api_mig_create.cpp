// MIG creation and destruction (fake_mig_ops.hpp has the rules), and the remaining-capacity
// queries. Changes go through with_state_change, so a shared state file sees each one whole.
#include "fake_entry.hpp"
#include "fake_mig_ops.hpp"

using namespace gpufrac::fake_nvml;
using gpufrac::MigProfile;

namespace {

// f(State&, PhysicalGpu&, profile) for a GPU handle in MIG mode and one of its profile ids.
template <class F>
nvmlReturn_t change_profile(nvmlDevice_t device, unsigned int profile_id, F&& f) noexcept {
  return with_state_change([&](State& s) -> nvmlReturn_t {
    nvmlDevice_st* d = find_device(s, device);
    if (!d) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->mig || !d->gpu->mig_capable() || !d->gpu->mig.current) return NVML_ERROR_NOT_SUPPORTED;
    const MigProfile* p = d->gpu->profile_by_id(profile_id);
    return p ? f(s, *d->gpu, *p) : NVML_ERROR_INVALID_ARGUMENT;
  });
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profile_id,
                                                                        unsigned int* count) {
  return with_state([&](State& s) -> nvmlReturn_t {
    PhysicalGpu* g = find_gpu(s, device);
    if (!g || !count) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g->mig_capable() || !g->mig.current) return NVML_ERROR_NOT_SUPPORTED;
    const MigProfile* p = g->profile_by_id(profile_id);
    if (!p) return NVML_ERROR_INVALID_ARGUMENT;
    *count = gpu_instance_capacity(*g, *p);
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profile_id,
                                                          nvmlGpuInstance_t* gpu_instance) {
  if (injected_failure("nvmlDeviceCreateGpuInstance")) return NVML_ERROR_UNKNOWN;
  return change_profile(device, profile_id, [&](State& s, PhysicalGpu& g, const MigProfile& p) {
    return create_gpu_instance(s, g, p, std::nullopt, gpu_instance);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profile_id,
                                                                       const nvmlGpuInstancePlacement_t* placement,
                                                                       nvmlGpuInstance_t* gpu_instance) {
  if (injected_failure("nvmlDeviceCreateGpuInstanceWithPlacement")) return NVML_ERROR_UNKNOWN;
  return change_profile(device, profile_id, [&](State& s, PhysicalGpu& g, const MigProfile& p) -> nvmlReturn_t {
    if (!placement || placement->size != p.memory_slices) return NVML_ERROR_INVALID_ARGUMENT;
    return create_gpu_instance(s, g, p, placement->start, gpu_instance);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpu_instance) {
  if (injected_failure("nvmlGpuInstanceDestroy")) return NVML_ERROR_UNKNOWN;
  return with_state_change([&](State& s) -> nvmlReturn_t {
    nvmlGpuInstance_st* gi = find_gpu_instance(s, gpu_instance);
    return gi ? destroy_gpu_instance(*gi) : NVML_ERROR_INVALID_ARGUMENT;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpu_instance,
                                                                                 unsigned int profile_id,
                                                                                 unsigned int* count) {
  return with_state([&](State& s) -> nvmlReturn_t {
    nvmlGpuInstance_st* gi = find_gpu_instance(s, gpu_instance);
    if (!gi || !count) return NVML_ERROR_INVALID_ARGUMENT;
    const gpufrac::MigComputeProfile* c = ci_profile_by_id(*gi, profile_id);
    if (!c) return NVML_ERROR_NOT_SUPPORTED;
    *count = compute_instance_capacity(*gi, *c);
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpu_instance,
                                                                   unsigned int profile_id,
                                                                   nvmlComputeInstance_t* compute_instance) {
  if (injected_failure("nvmlGpuInstanceCreateComputeInstance")) return NVML_ERROR_UNKNOWN;
  return with_state_change([&](State& s) -> nvmlReturn_t {
    nvmlGpuInstance_st* gi = find_gpu_instance(s, gpu_instance);
    return gi ? create_compute_instance(s, *gi, profile_id, std::nullopt, compute_instance)
              : NVML_ERROR_INVALID_ARGUMENT;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id, const nvmlComputeInstancePlacement_t* placement,
    nvmlComputeInstance_t* compute_instance) {
  if (injected_failure("nvmlGpuInstanceCreateComputeInstanceWithPlacement")) return NVML_ERROR_UNKNOWN;
  return with_state_change([&](State& s) -> nvmlReturn_t {
    nvmlGpuInstance_st* gi = find_gpu_instance(s, gpu_instance);
    if (!gi || !placement) return NVML_ERROR_INVALID_ARGUMENT;
    const gpufrac::MigComputeProfile* c = ci_profile_by_id(*gi, profile_id);
    if (c && placement->size != c->placement_size) return NVML_ERROR_INVALID_ARGUMENT;
    return create_compute_instance(s, *gi, profile_id, placement->start, compute_instance);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t compute_instance) {
  if (injected_failure("nvmlComputeInstanceDestroy")) return NVML_ERROR_UNKNOWN;
  return with_state_change([&](State& s) -> nvmlReturn_t {
    nvmlComputeInstance_st* ci = find_compute_instance(s, compute_instance);
    return ci ? destroy_compute_instance(*ci) : NVML_ERROR_INVALID_ARGUMENT;
  });
}
