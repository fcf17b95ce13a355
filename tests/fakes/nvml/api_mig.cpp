// MIG queries, answered from each GPU's MigState with NVML's rules: NOT_SUPPORTED on a GPU that is
// not MIG-capable, and for profiles, placements, instances and MIG devices while MIG mode is off;
// INVALID_ARGUMENT for unknown profiles, indices and handles; NOT_FOUND for an empty MIG device
// slot. Instance arrays must hold the profile's instanceCount entries, as with the real library.
#include "fake_entry.hpp"

using namespace gpufrac::fake_nvml;
using gpufrac::MigProfile;

namespace {

// f(PhysicalGpu&) for a GPU handle whose MIG mode is on.
template <class F>
nvmlReturn_t with_mig_gpu(nvmlDevice_t device, F&& f) noexcept {
  return with_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    return g.mig_capable() && g.mig.current ? f(g) : NVML_ERROR_NOT_SUPPORTED;
  });
}

template <class F>
nvmlReturn_t with_gpu_instance(nvmlGpuInstance_t gi, F&& f) noexcept {
  return with_state([&](State& s) -> nvmlReturn_t {
    nvmlGpuInstance_st* g = find_gpu_instance(s, gi);
    return g ? f(*g) : NVML_ERROR_INVALID_ARGUMENT;
  });
}

// The shared engines are the GPU instance's (NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED).
nvmlComputeInstanceProfileInfo_t ci_profile_info(const MigProfile& gi, const gpufrac::MigComputeProfile& c) {
  return {c.id, c.slices, c.max_count, c.multiprocessors, gi.copy_engines, gi.decoders, gi.encoders, gi.jpegs, gi.ofas};
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current, unsigned int* pending) {
  return with_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g.mig_capable()) return NVML_ERROR_NOT_SUPPORTED;
    *current = g.mig.current ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pending = g.mig.pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                                  nvmlGpuInstanceProfileInfo_t* info) {
  return with_mig_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const MigProfile* p = g.profile_by_index(profile);
    if (!p) return NVML_ERROR_NOT_SUPPORTED;
    *info = nvmlGpuInstanceProfileInfo_t{
        p->id,       0,           p->compute_slices, p->max_count, p->multiprocessors, p->copy_engines,
        p->decoders, p->encoders, p->jpegs,          p->ofas,      p->memory_mib};
    return NVML_SUCCESS;
  });
}

// placements == NULL: *count = how many; else INSUFFICIENT_SIZE unless *count holds them all.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                                            unsigned int profile_id,
                                                                            nvmlGpuInstancePlacement_t* placements,
                                                                            unsigned int* count) {
  return with_mig_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    const MigProfile* p = g.profile_by_id(profile_id);
    if (!count || !p) return NVML_ERROR_INVALID_ARGUMENT;
    auto n = static_cast<unsigned int>(p->placement_starts.size());
    if (!placements) {
      *count = n;
      return NVML_SUCCESS;
    }
    if (*count < n) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < n; ++i) placements[i] = {p->placement_starts[i], p->memory_slices};
    *count = n;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profile_id,
                                                        nvmlGpuInstance_t* gpu_instances, unsigned int* count) {
  return with_mig_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!gpu_instances || !count || !g.profile_by_id(profile_id)) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = 0;
    for (auto& gi : g.mig.gpu_instances)
      if (gi->profile.id == profile_id) gpu_instances[n++] = gi.get();
    *count = n;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                           nvmlGpuInstance_t* gpu_instance) {
  return with_mig_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!gpu_instance) return NVML_ERROR_INVALID_ARGUMENT;
    for (auto& gi : g.mig.gpu_instances)
      if (gi->id == id) {
        *gpu_instance = gi.get();
        return NVML_SUCCESS;
      }
    return NVML_ERROR_NOT_FOUND;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpu_instance, nvmlGpuInstanceInfo_t* info) {
  return with_gpu_instance(gpu_instance, [&](nvmlGpuInstance_st& gi) -> nvmlReturn_t {
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    *info = nvmlGpuInstanceInfo_t{&gi.gpu->handle, gi.id, gi.profile.id, {gi.placement.start, gi.placement.size}};
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpu_instance,
                                                                           unsigned int profile,
                                                                           unsigned int eng_profile,
                                                                           nvmlComputeInstanceProfileInfo_t* info) {
  return with_gpu_instance(gpu_instance, [&](nvmlGpuInstance_st& gi) -> nvmlReturn_t {
    if (!info || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
        eng_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
      return NVML_ERROR_INVALID_ARGUMENT;
    const gpufrac::MigComputeProfile* c = ci_profile_by_index(gi, profile);
    if (!c) return NVML_ERROR_NOT_SUPPORTED;
    *info = ci_profile_info(gi.profile, *c);
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpu_instance,
                                                                 unsigned int profile_id,
                                                                 nvmlComputeInstance_t* compute_instances,
                                                                 unsigned int* count) {
  return with_gpu_instance(gpu_instance, [&](nvmlGpuInstance_st& gi) -> nvmlReturn_t {
    if (!compute_instances || !count) return NVML_ERROR_INVALID_ARGUMENT;
    if (!ci_profile_by_id(gi, profile_id)) return NVML_ERROR_NOT_SUPPORTED;
    unsigned int n = 0;
    for (auto& ci : gi.compute_instances)
      if (ci->profile_id == profile_id) compute_instances[n++] = ci.get();
    *count = n;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpu_instance, unsigned int id,
                                                                    nvmlComputeInstance_t* compute_instance) {
  return with_gpu_instance(gpu_instance, [&](nvmlGpuInstance_st& gi) -> nvmlReturn_t {
    if (!compute_instance) return NVML_ERROR_INVALID_ARGUMENT;
    for (auto& ci : gi.compute_instances)
      if (ci->id == id) {
        *compute_instance = ci.get();
        return NVML_SUCCESS;
      }
    return NVML_ERROR_NOT_FOUND;
  });
}

// Every placement of the profile, free or not (as nvml.h documents); placements == NULL: the count.
FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
                                                    nvmlComputeInstancePlacement_t* placements, unsigned int* count) {
  return with_gpu_instance(gpu_instance, [&](nvmlGpuInstance_st& gi) -> nvmlReturn_t {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    const gpufrac::MigComputeProfile* c = ci_profile_by_id(gi, profile_id);
    if (!c) return NVML_ERROR_NOT_SUPPORTED;
    auto n = static_cast<unsigned int>(c->placement_starts.size());
    if (!placements) {
      *count = n;
      return NVML_SUCCESS;
    }
    if (*count < n) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < n; ++i) placements[i] = {c->placement_starts[i], c->placement_size};
    *count = n;
    return NVML_SUCCESS;
  });
}

// `device` is the parent GPU, as nvml.h documents the field.
FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t compute_instance,
                                                            nvmlComputeInstanceInfo_t* info) {
  return with_state([&](State& s) -> nvmlReturn_t {
    nvmlComputeInstance_st* ci = find_compute_instance(s, compute_instance);
    if (!ci || !info) return NVML_ERROR_INVALID_ARGUMENT;
    *info = nvmlComputeInstanceInfo_t{&ci->gi->gpu->handle, ci->gi, ci->id, ci->profile_id, {ci->start, ci->slices}};
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return with_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g.mig_capable()) return NVML_ERROR_NOT_SUPPORTED;
    *count = static_cast<unsigned int>(g.mig.slots.size());
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                                  nvmlDevice_t* mig_device) {
  return with_mig_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!mig_device || index >= g.mig.slots.size()) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g.mig.slots[index]) return NVML_ERROR_NOT_FOUND;
    *mig_device = &g.mig.slots[index]->device;
    return NVML_SUCCESS;
  });
}
