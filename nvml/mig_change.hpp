// Creating and destroying MIG instances through NVML (dynamic MIG), on a library that is open and
// initialised. Creation is a GPU instance at an explicit placement, then its full-size compute
// instance (the compute instance profile whose slice count is the GPU instance's; 1_SLICE_REV1 and
// 7_SLICE_NVL, which repeat the counts of 1_SLICE and 7_SLICE, are never taken); if the compute
// instance cannot be made, the GPU instance is destroyed again. Destruction is every compute
// instance, then the GPU instance. Each NVML failure is one line naming the call and the instance.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/inventory.hpp"
#include "nvml/nvml_library.hpp"

namespace gpufrac::nvml {

// A GPU instance as NVML reports it, with the ids of its compute instances (possibly none).
struct GpuInstanceInfo {
  std::uint32_t id = 0;
  std::uint32_t profile_id = 0;
  MigPlacement placement;
  std::vector<std::uint32_t> compute_instances;
};

struct CreatedInstance {
  std::uint32_t gi = 0;
  std::uint32_t ci = 0;
};

// The GPU handle for a GPU-<uuid>; fails when the library lacks the MIG change functions.
Result<nvmlDevice_t> mig_device(const Library& lib, const std::string& gpu_uuid);

// Every GPU instance of the GPU, over the given profiles (its MIG profile table), by id.
Result<std::vector<GpuInstanceInfo>> list_gpu_instances(const Library& lib, nvmlDevice_t device,
                                                        const std::vector<MigProfile>& profiles);

// Creates the GPU instance and its full-size compute instance. `after_gpu_instance(gi)` runs in
// between (crash tests kill the process there).
Result<CreatedInstance> create_mig_instance(const Library& lib, nvmlDevice_t device, const MigProfile& profile,
                                            std::uint32_t start,
                                            const std::function<void(std::uint32_t)>& after_gpu_instance = {});

// Destroys the GPU instance `gi` and its compute instances. NVML_ERROR_IN_USE (processes on it)
// is an error saying so.
Result<> destroy_gpu_instance(const Library& lib, nvmlDevice_t device, std::uint32_t gi);

}  // namespace gpufrac::nvml
