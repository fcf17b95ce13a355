// Compute instances in simulated machine files: a GPU instance profile's compute-profiles table
// (or the derived one when the file gives none), and MIG instances that name a compute instance
// profile ("1c.3g.40gb"), several of them per GPU instance, with the checks a real driver enforces.
#include <algorithm>
#include <map>
#include <set>

#include "core/mig/mig_device.hpp"
#include "core/mig/mig_profile_name.hpp"
#include "core/text.hpp"
#include "nvml/simulated_detail.hpp"

namespace gpufrac::sim {

using yaml::Located;

namespace {

Result<MigComputeProfile> parse_compute_profile(const Located& n, const MigProfile& gi) {
  if (auto r = yaml::check_keys(n, {"index", "id", "slices", "multiprocessors", "max", "placements", "placement-size"});
      !r)
    return std::unexpected(r.error());
  for (const char* required : {"index", "id", "slices", "multiprocessors", "max", "placements"})
    if (!n.node[required]) return n.fail(text::cat("missing key ", required));
  MigComputeProfile c;
  // 1_SLICE_REV1 (0x7) and 7_SLICE_NVL (0x8) repeat other slice counts; gpufrac never takes them.
  GPUFRAC_TRY_ASSIGN(c.index, u32(n.child("index"), 6));
  GPUFRAC_TRY_ASSIGN(c.id, u32(n.child("id"), 63));
  GPUFRAC_TRY_ASSIGN(c.slices, u32(n.child("slices"), gi.compute_slices));
  GPUFRAC_TRY_ASSIGN(c.multiprocessors, u32(n.child("multiprocessors"), 1024));
  GPUFRAC_TRY_ASSIGN(c.max_count, u32(n.child("max"), 8));
  c.placement_size = c.slices;
  if (n.node["placement-size"]) GPUFRAC_TRY_ASSIGN(c.placement_size, u32(n.child("placement-size"), 8));
  if (c.slices == 0 || c.max_count == 0 || c.multiprocessors == 0 || c.placement_size < c.slices)
    return n.fail("slices, max and multiprocessors must be non-zero, placement-size at least slices");
  Located pl = n.child("placements");
  if (auto r = yaml::require_sequence(pl); !r) return std::unexpected(r.error());
  for (std::size_t i = 0; i < pl.node.size(); ++i) {
    std::uint32_t start = 0;
    GPUFRAC_TRY_ASSIGN(start, u32(pl.item(i), 7));
    if (start + c.slices > gi.compute_slices)
      return pl.item(i).fail(
          text::cat("placement runs past the GPU instance's ", gi.compute_slices, " compute slices"));
    c.placement_starts.push_back(start);
  }
  if (c.placement_starts.empty()) return pl.fail("must list at least one placement");
  std::sort(c.placement_starts.begin(), c.placement_starts.end());
  return c;
}

bool overlaps(std::uint32_t a, std::uint32_t an, std::uint32_t b, std::uint32_t bn) {
  return a < b + bn && b < a + an;
}

// The GI profile and CI size an instance's profile names: "1c.3g.40gb" is 1 slice of 3g.40gb.
std::optional<std::pair<const MigProfile*, std::uint32_t>> split_device_profile(const Gpu& gpu,
                                                                                const std::string& name) {
  auto canonical = canonical_mig_profile(name);
  if (!canonical) return std::nullopt;
  for (const MigProfile& p : gpu.mig_profiles) {
    if (canonical_mig_profile_or_same(p.name) == *canonical) return std::pair{&p, p.compute_slices};
    for (std::uint32_t c = 1; c < p.compute_slices; ++c)
      if (canonical_mig_profile_or_same(mig_device_profile_name(p, c)) == *canonical) return std::pair{&p, c};
  }
  return std::nullopt;
}

// The compute instance profile of C slices in the GI's table (the full one: full_compute_profile).
const MigComputeProfile* ci_profile_of(const MigProfile& gi, std::uint32_t c) {
  for (const auto& p : gi.compute_profiles)
    if (p.slices == c) return &p;
  return nullptr;
}

}  // namespace

Result<std::vector<MigComputeProfile>> parse_compute_profiles(const Located& n, const MigProfile& gi) {
  if (!n.node) return derived_compute_profiles(gi);
  if (auto r = yaml::require_sequence(n); !r) return std::unexpected(r.error());
  std::vector<MigComputeProfile> out;
  for (std::size_t i = 0; i < n.node.size(); ++i) {
    auto c = parse_compute_profile(n.item(i), gi);
    if (!c) return std::unexpected(c.error());
    for (const auto& prior : out)
      if (prior.index == c->index || prior.id == c->id || prior.slices == c->slices)
        return n.item(i).fail("repeats the index, id or slices of another compute profile");
    out.push_back(std::move(*c));
  }
  if (std::none_of(out.begin(), out.end(), [&](const auto& c) { return c.slices == gi.compute_slices; }))
    return n.fail(text::cat("must include the full-size compute profile (slices: ", gi.compute_slices, ")"));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.slices < b.slices; });
  return out;
}

Result<> fill_compute_instance(const Located& n, const Gpu& gpu, MigInstance& m) {
  auto split = split_device_profile(gpu, m.profile_name);
  if (!split) return n.child("profile").fail(text::quote(m.profile_name) + " is not a profile of this GPU");
  const auto [p, c] = *split;
  const MigComputeProfile* ci = ci_profile_of(*p, c);
  if (ci == nullptr)
    return n.child("profile").fail(text::cat(p->name, " offers no compute instance of ", c, " slices"));
  m.profile_id = p->id;
  m.profile_name = p->name;
  m.compute_slices = c;
  m.ci_profile_id = ci->id;
  m.multiprocessors = ci->multiprocessors;
  for (const MigInstance& o : gpu.mig_instances)
    if (o.gi_id == m.gi_id && (o.profile_id != m.profile_id || o.placement.start != m.placement.start))
      return n.child("gi").fail(text::cat("GPU instance ", m.gi_id, " is a ", o.profile_name, "@", o.placement.start,
                                          " already; entries with one gi are compute instances of one GPU instance"));
  std::vector<std::uint32_t> taken;  // compute slices of earlier compute instances of this GPU instance
  for (const MigInstance& o : gpu.mig_instances)
    if (o.gi_id == m.gi_id)
      for (std::uint32_t s = o.ci_start; s < o.ci_start + o.compute_slices; ++s) taken.push_back(s);
  auto free_at = [&](std::uint32_t start) {
    return std::none_of(taken.begin(), taken.end(), [&](std::uint32_t s) { return overlaps(start, c, s, 1); });
  };
  if (n.node["ci-start"]) {
    GPUFRAC_TRY_ASSIGN(m.ci_start, u32(n.child("ci-start"), 7));
    if (std::find(ci->placement_starts.begin(), ci->placement_starts.end(), m.ci_start) == ci->placement_starts.end())
      return n.child("ci-start").fail(text::cat("is not a placement of ", mig_device_profile_name(*p, c)));
    if (!free_at(m.ci_start)) return n.child("ci-start").fail("overlaps another compute instance of this GPU instance");
    return {};
  }
  auto start = std::find_if(ci->placement_starts.begin(), ci->placement_starts.end(), free_at);
  if (start == ci->placement_starts.end())
    return n.fail(text::cat("GPU instance ", m.gi_id, " has no room left for a ", mig_device_profile_name(*p, c)));
  m.ci_start = *start;
  return {};
}

Result<> check_compute_instances(const Located& list, const Gpu& g) {
  std::map<std::uint32_t, std::vector<std::size_t>> by_gi;
  for (std::size_t i = 0; i < g.mig_instances.size(); ++i) by_gi[g.mig_instances[i].gi_id].push_back(i);
  for (const auto& [gi, items] : by_gi) {
    const MigInstance& first = g.mig_instances[items.front()];
    const MigProfile& p = *g.profile_by_id(first.profile_id);
    std::set<std::uint32_t> cis;
    std::uint32_t slices = 0;
    for (std::size_t i : items) {
      const MigInstance& m = g.mig_instances[i];
      if (m.profile_id != first.profile_id || m.placement.start != first.placement.start)
        return list.item(i).child("profile").fail(
            text::cat("GPU instance ", gi, " is a ", p.name, "@", first.placement.start, " already"));
      if (!cis.insert(m.ci_id).second) {
        const Located item = list.item(i);
        return (item.node["ci"] ? item.child("ci") : item).fail(text::cat("duplicate compute instance id ", m.ci_id));
      }
      slices += m.compute_slices;
      auto same = std::count_if(items.begin(), items.end(), [&](std::size_t j) {
        return j <= i && g.mig_instances[j].compute_slices == m.compute_slices;
      });
      if (slices > p.compute_slices || static_cast<std::uint32_t>(same) > ci_profile_of(p, m.compute_slices)->max_count)
        return list.item(i).child("profile").fail("more compute instances than the GPU instance allows");
    }
  }
  return {};
}

}  // namespace gpufrac::sim
