// Internal to the simulated backend: parsing of profile sets and GPUs (simulated_gpu.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/config/yaml_util.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac::sim {

using ProfileSets = std::map<std::string, std::vector<MigProfile>>;

bool valid_uuid(const std::string& s, std::string_view prefix);
Result<std::uint32_t> u32(const yaml::Located& n, std::uint64_t max);
Result<ProfileSets> parse_profile_sets(const yaml::Located& n);
Result<Gpu> parse_gpu(const yaml::Located& n, std::uint32_t index, const ProfileSets& sets);
Result<> check_instances(const yaml::Located& n, const Gpu& gpu);
// The file's topology: (links and NUMA nodes of every GPU, simulated_topology.cpp); without one,
// every pair PHB and NUMA node 0.
Result<> parse_topology(const yaml::Located& n, std::vector<Gpu>& gpus);
// Compute instances (simulated_ci.cpp): a GI profile's compute-profiles (derived when absent); an
// instance's compute instance from its profile name and ci-start (the first free placement when
// absent; the GPU's earlier instances are taken into account); the per-GPU-instance checks.
Result<std::vector<MigComputeProfile>> parse_compute_profiles(const yaml::Located& n, const MigProfile& gi);
Result<> fill_compute_instance(const yaml::Located& n, const Gpu& gpu, MigInstance& instance);
Result<> check_compute_instances(const yaml::Located& list, const Gpu& gpu);

}  // namespace gpufrac::sim
