// Placement search for the dynamic MIG planner (rules in mig_plan.hpp). A GPU holds at most as
// many GPU instances as it has compute slices (7), so every subset of its destroyable ones is
// tried, smallest first: the first size that makes room is the fewest instances to destroy.
#include <algorithm>
#include <bit>

#include "core/mig/mig_place.hpp"
#include "core/text.hpp"

namespace gpufrac::mig_detail {

namespace {

bool prefers_high_start(const Gpu& gpu, const MigProfile& p) {
  return p.memory_slices == 4 && p.memory_slices < gpu.memory_slices();
}

struct Remaining {
  std::vector<MigPlacement> placements;
  std::uint32_t compute = 0;
  std::uint32_t same_profile = 0;
};

Remaining remaining_after(const MigGpuView& view, const MigProfile& p, std::uint32_t destroyed_mask) {
  Remaining r;
  for (std::size_t i = 0; i < view.occupants.size(); ++i) {
    if (destroyed_mask & (1u << i)) continue;
    const MigOccupant& o = view.occupants[i];
    r.placements.push_back(o.placement);
    r.compute += o.compute_slices;
    if (o.profile_id == p.id) ++r.same_profile;
  }
  return r;
}

bool overlaps_any(const MigPlacement& pl, const std::vector<MigPlacement>& occupied) {
  return std::any_of(occupied.begin(), occupied.end(), [&](const MigPlacement& o) { return pl.overlaps(o); });
}

// The best placement with exactly the occupants in `mask` destroyed, if any.
std::optional<PlacementChoice> place_with(const MigGpuView& view, const MigProfile& p, std::uint32_t mask,
                                          std::uint32_t before, std::optional<std::uint32_t> only) {
  Remaining rest = remaining_after(view, p, mask);
  if (rest.same_profile >= p.max_count || rest.compute + p.compute_slices > full_compute_slices(*view.gpu))
    return std::nullopt;
  std::optional<PlacementChoice> best;
  for (std::uint32_t start : p.placement_starts) {
    const MigPlacement pl{start, p.memory_slices};
    if ((only && start != *only) || overlaps_any(pl, rest.placements)) continue;
    std::vector<MigPlacement> after = rest.placements;
    after.push_back(pl);
    PlacementChoice c;
    c.start = start;
    c.score = usable_free_slices(*view.gpu, after);
    c.loss = static_cast<std::int64_t>(before) - c.score;
    c.tie = prefers_high_start(*view.gpu, p) ? -static_cast<std::int64_t>(start) : start;
    for (std::size_t i = 0; i < view.occupants.size(); ++i)
      if (mask & (1u << i)) c.destroyed.push_back(i);
    if (!best || better(c, *best)) best = std::move(c);
  }
  return best;
}

}  // namespace

std::uint32_t full_compute_slices(const Gpu& gpu) {
  std::uint32_t n = 0;
  for (const auto& p : gpu.mig_profiles) n = std::max(n, p.compute_slices);
  return n;
}

bool better(const PlacementChoice& a, const PlacementChoice& b) {
  if (a.destroyed.size() != b.destroyed.size()) return a.destroyed.size() < b.destroyed.size();
  if (a.loss != b.loss) return a.loss < b.loss;
  if (a.score != b.score) return a.score < b.score;
  if (a.tie != b.tie) return a.tie < b.tie;
  return a.destroyed < b.destroyed;
}

std::optional<PlacementChoice> best_placement(const MigGpuView& view, const MigProfile& p,
                                              std::optional<std::uint32_t> start) {
  if (view.occupants.size() > 16) return std::nullopt;  // not a real GPU: NVML allows at most 7
  std::uint32_t destroyable = 0;
  for (std::size_t i = 0; i < view.occupants.size(); ++i)
    if (view.occupants[i].destroyable()) destroyable |= 1u << i;
  std::vector<MigPlacement> all;
  for (const MigOccupant& o : view.occupants) all.push_back(o.placement);
  const std::uint32_t before = usable_free_slices(*view.gpu, all);
  std::optional<PlacementChoice> best;
  // Every subset of the destroyable instances, by size: submasks of `destroyable`.
  for (int size = 0; size <= std::popcount(destroyable) && !best; ++size) {
    for (std::uint32_t mask = destroyable;; mask = (mask - 1) & destroyable) {
      if (std::popcount(mask) == size)
        if (auto c = place_with(view, p, mask, before, start); c && (!best || better(*c, *best))) best = std::move(c);
      if (mask == 0) break;
    }
  }
  return best;
}

}  // namespace gpufrac::mig_detail

namespace gpufrac {

std::uint32_t usable_free_slices(const Gpu& gpu, const std::vector<MigPlacement>& occupied) {
  std::uint32_t usable = 0;
  for (std::uint32_t s = 0; s < gpu.memory_slices(); ++s) {
    const MigPlacement slice{s, 1};
    if (mig_detail::overlaps_any(slice, occupied)) continue;
    bool reachable = false;
    for (const MigProfile& p : gpu.mig_profiles)
      for (std::uint32_t start : p.placement_starts) {
        const MigPlacement pl{start, p.memory_slices};
        reachable = reachable || (pl.overlaps(slice) && !mig_detail::overlaps_any(pl, occupied));
      }
    if (reachable) ++usable;
  }
  return usable;
}

std::string placement_text(const std::string& profile, const MigPlacement& p) {
  return text::cat(profile, "@", p.start);
}

}  // namespace gpufrac
