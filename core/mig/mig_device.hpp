// MIG devices down to compute instances (docs/architecture.md "Dynamic MIG", "Compute share"): the
// shapes a GPU offers (a GPU instance profile with one of its compute instance profiles), their
// names and SMs, and what a percent of compute means on MIG. Pure.
//  - A MIG device is one compute instance (CI) of a GPU instance (GI). The full-size CI owns all
//    the GI's SMs and is named by the GI profile ("3g.40gb"); a smaller one is "<C>c.<GI profile>"
//    ("1c.3g.40gb") and owns C compute slices' SMs, sharing the GI's memory with its siblings.
//  - Compute on MIG is a percent of the SMs of the GPU's full profile (7g: 98 on an A100, whose
//    other 10 SMs MIG never uses; 132 on an H100 SXM): compute 40 needs ceil(0.40 x 98) = 40 SMs on
//    an A100, so 3 slices (42).
//  - SMs come from NVML: a GI profile's multiprocessorCount always (the full CI has them all), a CI
//    profile's only once NVML answered for a GI of that profile (MigProfile::compute_profiles).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/inventory/inventory.hpp"

namespace gpufrac {

// The compute instance profiles NVML offers in a GPU instance of `gi` when a machine file names
// none: C of 1, 2, 3, 4, 6, 7, 8 slices (NVML indices 0x0-0x6) with C == G or 2C <= G + 1
// (go-nvlib's rule: 7g takes 1c 2c 3c 4c 7c, 4g 1c 2c 4c, 3g 1c 2c 3c, 2g 1c 2c, 1g 1c), id = the
// index, at most G / C of them at aligned starts, SMs in proportion to the GI's.
std::vector<MigComputeProfile> derived_compute_profiles(const MigProfile& gi);

// Keeps what an earlier discovery learned: a GI profile of a GPU (same UUID, profile id, slices)
// whose compute instance profiles NVML did not answer now (no GPU instance of it exists) takes the
// ones `previous` lists.
void learn_compute_profiles(Inventory& fresh, const Inventory& previous);

// The full-size compute instance of a GI profile: from its table when known (the profile of G
// slices with the most SMs), else synthesized with the GI's SMs (its id then unknown: 0).
MigComputeProfile full_compute_profile(const MigProfile& gi);

// "1c.3g.40gb" for 1 of a 3g.40gb's 3 slices, "3g.40gb" for all of them.
std::string mig_device_profile_name(const MigProfile& gi, std::uint32_t ci_slices);
// The device profile of an existing instance (its GI profile's name when the GPU lacks the profile).
std::string mig_device_profile(const Gpu& gpu, const MigInstance& instance);

// The SMs of the GPU's full profile (the most any GI profile has); 0 without MIG profiles.
std::uint32_t full_multiprocessors(const Gpu& gpu);
// The SMs a compute share (ppm of the full profile) needs: ceil(ppm x full / 10^6).
std::uint32_t multiprocessors_for(const Gpu& gpu, std::uint32_t compute_ppm);
// The share of the full profile `sms` SMs are, in ppm, rounded down.
std::uint32_t compute_ppm_of(const Gpu& gpu, std::uint32_t sms);

// A GI profile with one of its CI profiles.
struct MigShape {
  const MigProfile* gi = nullptr;
  MigComputeProfile ci;
  bool full() const { return ci.slices == gi->compute_slices; }
  // The CI profile came from NVML (its id, placements and SMs): the GI profile's table is known.
  bool known() const { return !gi->compute_profiles.empty(); }
  std::string name() const { return mig_device_profile_name(*gi, ci.slices); }
};

// Every shape of the GPU: the full CI of each GI profile, and the smaller CI profiles of the GI
// profiles whose table is known. By GI profile (inventory order), then CI slices.
std::vector<MigShape> mig_shapes(const Gpu& gpu);
// The shape named `name` (canonical device profile). A smaller CI of a GI profile whose table is
// not known yet is synthesized by derived_compute_profiles (SMs unknown: 0); nullopt when the GPU
// has no such GI profile or the CI size is not one NVML offers there.
std::optional<MigShape> mig_shape_named(const Gpu& gpu, const std::string& name);
// The shape of an existing instance.
std::optional<MigShape> mig_shape_of(const Gpu& gpu, const MigInstance& instance);

// The memory of a GI profile in bytes.
inline std::uint64_t gi_memory_bytes(const MigProfile& gi) {
  return gi.memory_mib * kMiB;
}
// The equal split: what a smaller CI books of its GI's memory when the request names no amount,
// GI memory x C / G in whole MiB (1c.3g.40gb: 40448 MiB / 3 = 13482 MiB).
std::uint64_t equal_split_bytes(const MigShape& shape);

}  // namespace gpufrac
