// Internal to the real NVML backend: the MIG part of discovery (nvml_mig.cpp) and profile naming.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "nvml/nvml_library.hpp"

namespace gpufrac::nvml {

// Fills mig_capable/enabled/pending and, while MIG mode is enabled, the profiles and the
// instances of `gpu` (whose memory_bytes is already set). MIG instance memory is the profile's
// memorySizeMB: the MIG handle's nvmlDeviceGetMemoryInfo total differs slightly per driver.
Result<> read_mig(const Library& lib, nvmlDevice_t device, Gpu& gpu);

// Fills numa_node and links (core/inventory/gpu_link.hpp) of every GPU, devices[i] being gpus[i]'s handle;
// what the library lacks or does not answer stays unknown (nvml_topology.cpp).
void read_topology(const Library& lib, const std::vector<nvmlDevice_t>& devices, std::vector<Gpu>& gpus);

// Calls `visit` with every GPU instance of `device`, profile by profile (nvmlDeviceGetGpuInstances).
Result<> for_each_gpu_instance(const Library& lib, nvmlDevice_t device, const std::vector<MigProfile>& profiles,
                               const std::function<Result<>(nvmlGpuInstance_t)>& visit);

// The profile name go-nvlib (NVIDIA's device plugin and DRA driver) derives from a GPU instance
// profile: "<G>g.<GB>gb" plus "+me", "+me.all", "+gfx" or "-me" by profile index, where GB is
// memorySizeMB rounded up to eighths of the GPU's memory, times the GPU's memory in whole GiB.
std::string gi_profile_name(std::uint32_t profile_index, std::uint32_t slice_count, std::uint64_t memory_mib,
                            std::uint64_t device_memory_bytes);

}  // namespace gpufrac::nvml
