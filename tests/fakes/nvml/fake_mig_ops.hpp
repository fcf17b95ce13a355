// MIG creation and destruction on the fake's state, with the driver's rules: a GPU instance needs
// a placement of its profile whose memory slices are free, fewer than the profile's max count of
// it, and compute slices left on the GPU (the full profile's count, 7 on A100/H100); anything else
// is NVML_ERROR_INSUFFICIENT_RESOURCES. Ids are the smallest free (GPU instances from 1, compute
// instances from 0); each new MIG device gets a new UUID. Destroying a GPU instance that still
// has compute instances, or a compute instance named in GPUFRAC_FAKE_NVML_BUSY (comma-separated
// MIG UUIDs: processes run on it), is NVML_ERROR_IN_USE.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fake_state.hpp"

namespace gpufrac::fake_nvml {

inline constexpr const char* kBusyEnv = "GPUFRAC_FAKE_NVML_BUSY";
// GPUFRAC_FAKE_NVML_FAIL: comma-separated names of create/destroy functions that fail with
// NVML_ERROR_UNKNOWN and change nothing (tests of rollback paths).
inline constexpr const char* kFailEnv = "GPUFRAC_FAKE_NVML_FAIL";
bool injected_failure(const char* function);

// start = nullopt: the driver's choice, modelled as the highest free placement. That reproduces
// the MIG user guide's failing order: 1g, 1g, 2g, 3g take slices 6, 5, then 2-3, and 3g.20gb
// (placements 0 and 4) finds no room.
nvmlReturn_t create_gpu_instance(State& state, PhysicalGpu& gpu, const MigProfile& profile,
                                 std::optional<std::uint32_t> start, nvmlGpuInstance_st** out);
// ci_profile_id: a compute instance profile id the GPU instance offers (else NOT_SUPPORTED). At a
// placement of the profile (another start is INVALID_ARGUMENT) or, without one, the lowest free
// placement; an occupied placement, or the profile's count reached, is INSUFFICIENT_RESOURCES.
nvmlReturn_t create_compute_instance(State& state, nvmlGpuInstance_st& gi, std::uint32_t ci_profile_id,
                                     std::optional<std::uint32_t> start, nvmlComputeInstance_st** out);
nvmlReturn_t destroy_compute_instance(nvmlComputeInstance_st& ci);
nvmlReturn_t destroy_gpu_instance(nvmlGpuInstance_st& gi);

// How many more instances of the profile fit now (placements, count, compute slices).
unsigned int gpu_instance_capacity(const PhysicalGpu& gpu, const MigProfile& profile);
// How many more compute instances of the profile fit in the GPU instance (free placements, count).
unsigned int compute_instance_capacity(const nvmlGpuInstance_st& gi, const MigComputeProfile& profile);

// MIG-<uuid> number `serial` of a GPU: a stable function of both, so runs are reproducible.
std::string mig_uuid_for(const std::string& gpu_uuid, std::uint64_t serial);

}  // namespace gpufrac::fake_nvml
