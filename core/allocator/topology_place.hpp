// Which N GPUs a multi-GPU share takes (docs/architecture.md "Requests and allocation",
// "Placement"): pure, over candidates that can each take the share. Rules, in order:
//  1. Links: the set whose pairs are closest, compared worst pair first (link_distance: NVLinks,
//     more of them closer; then PIX, PXB, PHB, NODE, SYS; unknown last), then the next worst, and
//     so on: a tensor-parallel job runs at the pace of its slowest link.
//  2. Policy: binpack the set whose GPUs are fuller (sum of reserved/total in ppm, higher), spread
//     the emptier.
//  3. The lowest indices (the candidates' order, compared as a sorted list).
// Every set is compared when there are at most kMaxPlacementSets of them; beyond, a greedy search
// (from each candidate, add the GPU that keeps the set best) bounds the work on large nodes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/config.hpp"

namespace gpufrac {

inline constexpr std::uint64_t kMaxPlacementSets = 100'000;

struct PlacementInput {
  // distance[i][j]: link_distance between candidates i and j (symmetric; the diagonal unused).
  std::vector<std::vector<std::uint32_t>> distance;
  // Per candidate: reserved / total of its GPU, in ppm (the policy's measure).
  std::vector<std::uint64_t> fullness;
  std::uint32_t count = 0;  // GPUs wanted
  Policy policy = Policy::binpack;
  std::uint64_t max_sets = kMaxPlacementSets;  // tests lower it to reach the greedy search
};

// The chosen candidates, ascending; empty when there are fewer than `count`.
std::vector<std::size_t> best_gpu_set(const PlacementInput& input);

// a is strictly better than b under the rules above (both ascending, of size count).
bool better_gpu_set(const PlacementInput& input, const std::vector<std::size_t>& a, const std::vector<std::size_t>& b);

}  // namespace gpufrac
