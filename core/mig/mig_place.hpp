// Internal to the dynamic MIG planner: the placement search on one GPU (mig_place.cpp) that
// plan_mig (mig_plan.cpp) runs per candidate profile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/mig/mig_plan.hpp"

namespace gpufrac::mig_detail {

struct PlacementChoice {
  std::vector<std::size_t> destroyed;  // indices into MigGpuView::occupants, ascending
  std::uint32_t start = 0;
  std::uint32_t score = 0;  // usable free memory slices afterwards
  std::int64_t loss = 0;    // usable free memory slices before (every instance kept) minus score
  std::int64_t tie = 0;     // smaller is better: -start for 4-slice partial profiles, else start
};

// The best placement of `profile` on `view`, destroying the fewest destroyable GPU instances;
// nullopt when no set of them makes room.
// `start`: only the placement beginning at that memory slice (a DRA profile device's).
std::optional<PlacementChoice> best_placement(const MigGpuView& view, const MigProfile& profile,
                                              std::optional<std::uint32_t> start = std::nullopt);

// a is better than b: fewer destroyed, smaller loss (on one GPU: the higher score), then the
// fuller GPU (lower score), then the start rule. Across GPUs ties go to the lowest index.
bool better(const PlacementChoice& a, const PlacementChoice& b);

// The compute slices of the GPU's full profile (7 on A100/H100): the most any profile has.
std::uint32_t full_compute_slices(const Gpu& gpu);

// The best start for a compute instance of `ci` in a GPU instance of `gi` that holds `cis` now
// (mig_ci_place.cpp): among its placements that overlap none of them, while the profile's count
// allows one more, the one that keeps the largest compute instance profile of `gi` placeable,
// then the most placements of all its profiles free, then the lowest. nullopt when none is free.
std::optional<std::uint32_t> best_ci_start(const MigProfile& gi, const MigComputeProfile& ci,
                                           const std::vector<MigCiOccupant>& cis);

}  // namespace gpufrac::mig_detail
