#include "core/allocator/topology_place.hpp"

#include <algorithm>
#include <functional>

namespace gpufrac {

namespace {

// The set's pair distances, worst first.
std::vector<std::uint32_t> link_profile(const PlacementInput& in, const std::vector<std::size_t>& set) {
  std::vector<std::uint32_t> d;
  for (std::size_t i = 0; i < set.size(); ++i)
    for (std::size_t j = i + 1; j < set.size(); ++j) d.push_back(in.distance[set[i]][set[j]]);
  std::sort(d.begin(), d.end(), std::greater<>());
  return d;
}

std::uint64_t fullness(const PlacementInput& in, const std::vector<std::size_t>& set) {
  std::uint64_t sum = 0;
  for (auto i : set) sum += in.fullness[i];
  return sum;
}

// C(n, k), saturating at `cap`.
std::uint64_t combinations(std::uint64_t n, std::uint64_t k, std::uint64_t cap) {
  std::uint64_t c = 1;
  for (std::uint64_t i = 1; i <= k; ++i) {
    c = c * (n - k + i) / i;  // exact at every step: C(n-k+i, i)
    if (c > cap) return cap + 1;
  }
  return c;
}

std::vector<std::size_t> exhaustive(const PlacementInput& in, std::size_t n) {
  std::vector<std::size_t> set(in.count), best;
  for (std::size_t i = 0; i < set.size(); ++i) set[i] = i;
  while (true) {
    if (best.empty() || better_gpu_set(in, set, best)) best = set;
    std::size_t i = set.size();
    while (i > 0 && set[i - 1] == n - set.size() + i - 1) --i;
    if (i == 0) return best;
    ++set[i - 1];
    for (std::size_t j = i; j < set.size(); ++j) set[j] = set[j - 1] + 1;
  }
}

// From each candidate, grow the set by the GPU that keeps it best; the best of those sets.
std::vector<std::size_t> greedy(const PlacementInput& in, std::size_t n) {
  std::vector<std::size_t> best;
  for (std::size_t start = 0; start < n; ++start) {
    std::vector<std::size_t> set{start};
    while (set.size() < in.count) {
      std::vector<std::size_t> pick;
      for (std::size_t c = 0; c < n; ++c) {
        if (std::find(set.begin(), set.end(), c) != set.end()) continue;
        auto grown = set;
        grown.insert(std::upper_bound(grown.begin(), grown.end(), c), c);
        if (pick.empty() || better_gpu_set(in, grown, pick)) pick = std::move(grown);
      }
      set = std::move(pick);
    }
    if (best.empty() || better_gpu_set(in, set, best)) best = std::move(set);
  }
  return best;
}

}  // namespace

bool better_gpu_set(const PlacementInput& in, const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  const auto la = link_profile(in, a), lb = link_profile(in, b);
  if (la != lb) return la < lb;
  const std::uint64_t fa = fullness(in, a), fb = fullness(in, b);
  if (fa != fb) return in.policy == Policy::binpack ? fa > fb : fa < fb;
  return a < b;
}

std::vector<std::size_t> best_gpu_set(const PlacementInput& in) {
  const std::size_t n = in.fullness.size();
  if (in.count == 0 || n < in.count) return {};
  if (combinations(n, in.count, in.max_sets) <= in.max_sets) return exhaustive(in, n);
  return greedy(in, n);
}

}  // namespace gpufrac
