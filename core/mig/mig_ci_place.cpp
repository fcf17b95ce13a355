// Compute instance placement inside a GPU instance for the dynamic MIG planner (rule in
// mig_place.hpp). A GPU instance has at most 8 compute slices, so every choice is tried.
#include <algorithm>

#include "core/mig/mig_place.hpp"

namespace gpufrac::mig_detail {

namespace {

struct Span {
  std::uint32_t start = 0, size = 0;
  bool overlaps(const Span& o) const { return start < o.start + o.size && o.start < start + size; }
};

bool free_at(const std::vector<Span>& taken, const Span& s) {
  return std::none_of(taken.begin(), taken.end(), [&](const Span& t) { return t.overlaps(s); });
}

// The compute slices a placement of the profile occupies: NVML's placement size (a Hopper 3g's
// full compute instance is reported at 0:4), at least its slices.
std::uint32_t span_of(const MigComputeProfile& c) {
  return std::max(c.slices, c.placement_size);
}

// (largest compute instance profile still placeable, placements of all profiles still free).
std::pair<std::uint32_t, std::uint32_t> room(const MigProfile& gi, const std::vector<Span>& taken) {
  std::uint32_t largest = 0, free = 0;
  for (const MigComputeProfile& c : gi.compute_profiles)
    for (std::uint32_t start : c.placement_starts)
      if (free_at(taken, {start, span_of(c)})) {
        largest = std::max(largest, c.slices);
        ++free;
      }
  return {largest, free};
}

}  // namespace

std::optional<std::uint32_t> best_ci_start(const MigProfile& gi, const MigComputeProfile& ci,
                                           const std::vector<MigCiOccupant>& cis) {
  std::vector<Span> taken;
  std::uint32_t same = 0;
  for (const MigCiOccupant& c : cis) {
    const MigComputeProfile* p = gi.compute_profile_by_id(c.profile_id);
    taken.push_back({c.start, p != nullptr && p->slices == c.slices ? span_of(*p) : c.slices});
    same += c.slices == ci.slices;
  }
  if (same >= ci.max_count) return std::nullopt;
  std::optional<std::uint32_t> best;
  std::pair<std::uint32_t, std::uint32_t> best_room{};
  for (std::uint32_t start : ci.placement_starts) {
    if (!free_at(taken, {start, span_of(ci)})) continue;
    auto after = taken;
    after.push_back({start, span_of(ci)});
    const auto r = room(gi, after);
    if (!best || r > best_room) {
      best = start;
      best_room = r;
    }
  }
  return best;
}

}  // namespace gpufrac::mig_detail
