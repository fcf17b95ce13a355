// Creating and destroying MIG instances through NVML (dynamic MIG), on a library that is open and
// initialised. Creation is a GPU instance at an explicit placement, then a compute instance in it
// (the full-size one, or a smaller one), or a compute instance added to an existing GPU instance.
// The compute instance profile is the planner's id, or the GPU instance's profile of that slice
// count with the most SMs (1_SLICE_REV1 and 7_SLICE_NVL, which repeat the counts of 1_SLICE and
// 7_SLICE, are never taken); it goes at the planner's start when the driver has
// nvmlGpuInstanceCreateComputeInstanceWithPlacement, else where the driver chooses. If the compute
// instance of a new GPU instance cannot be made, the GPU instance is destroyed again. Destruction
// is every compute instance, then the GPU instance. Each NVML failure is one line naming the call
// and the instance.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
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

// The compute instance to make: its slices, and its profile id and start when the planner knew them.
struct ComputeInstanceSpec {
  std::uint32_t slices = 0;
  std::optional<std::uint32_t> profile_id;
  std::optional<std::uint32_t> start;
};

// The GPU handle for a GPU-<uuid>; fails when the library lacks the MIG change functions.
Result<nvmlDevice_t> mig_device(const Library& lib, const std::string& gpu_uuid);

// Every GPU instance of the GPU, over the given profiles (its MIG profile table), by id.
Result<std::vector<GpuInstanceInfo>> list_gpu_instances(const Library& lib, nvmlDevice_t device,
                                                        const std::vector<MigProfile>& profiles);

// Creates the GPU instance and the compute instance in it. `after_gpu_instance(gi)` runs in
// between (crash tests kill the process there).
Result<CreatedInstance> create_mig_instance(const Library& lib, nvmlDevice_t device, const MigProfile& profile,
                                            std::uint32_t start, const ComputeInstanceSpec& ci,
                                            const std::function<void(std::uint32_t)>& after_gpu_instance = {});

// Adds a compute instance to the existing GPU instance `gi`.
Result<CreatedInstance> add_compute_instance(const Library& lib, nvmlDevice_t device, std::uint32_t gi,
                                             const ComputeInstanceSpec& ci);

// Destroys the GPU instance `gi` and its compute instances. NVML_ERROR_IN_USE (processes on it)
// is an error saying so.
Result<> destroy_gpu_instance(const Library& lib, nvmlDevice_t device, std::uint32_t gi);

}  // namespace gpufrac::nvml
