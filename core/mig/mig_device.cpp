#include "core/mig/mig_device.hpp"

#include <algorithm>

#include "core/mig/mig_profile_name.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

// NVML_COMPUTE_INSTANCE_PROFILE_* 0x0..0x6: 1, 2, 3, 4, 7, 8 and 6 slices.
constexpr std::uint32_t kIndexSlices[] = {1, 2, 3, 4, 7, 8, 6};

bool offered(std::uint32_t c, std::uint32_t g) {
  return c > 0 && c <= g && (c == g || 2 * c <= g + 1);
}

}  // namespace

std::vector<MigComputeProfile> derived_compute_profiles(const MigProfile& gi) {
  std::vector<MigComputeProfile> out;
  const std::uint32_t g = gi.compute_slices;
  for (std::uint32_t index = 0; index < std::size(kIndexSlices); ++index) {
    const std::uint32_t c = kIndexSlices[index];
    if (!offered(c, g)) continue;
    MigComputeProfile p{index, index, c, g / c, g > 0 ? gi.multiprocessors * c / g : 0, {}, c};
    for (std::uint32_t start = 0; start + c <= g; start += c) p.placement_starts.push_back(start);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.slices < b.slices; });
  return out;
}

void learn_compute_profiles(Inventory& fresh, const Inventory& previous) {
  for (Gpu& g : fresh.gpus) {
    const Gpu* old = previous.gpu_by_uuid(g.uuid);
    if (old == nullptr) continue;
    for (MigProfile& p : g.mig_profiles) {
      const MigProfile* known = old->profile_by_id(p.id);
      if (p.compute_profiles.empty() && known != nullptr && known->compute_slices == p.compute_slices)
        p.compute_profiles = known->compute_profiles;
    }
  }
}

MigComputeProfile full_compute_profile(const MigProfile& gi) {
  const MigComputeProfile* best = nullptr;
  for (const auto& c : gi.compute_profiles)
    if (c.slices == gi.compute_slices && (best == nullptr || c.multiprocessors > best->multiprocessors)) best = &c;
  if (best != nullptr) return *best;
  return MigComputeProfile{0, 0, gi.compute_slices, 1, gi.multiprocessors, {0}, gi.compute_slices};
}

std::string mig_device_profile_name(const MigProfile& gi, std::uint32_t ci_slices) {
  if (ci_slices == 0 || ci_slices >= gi.compute_slices) return gi.name;
  return text::cat(ci_slices, "c.", gi.name);
}

std::string mig_device_profile(const Gpu& gpu, const MigInstance& m) {
  const MigProfile* gi = gpu.profile_by_id(m.profile_id);
  return gi != nullptr ? mig_device_profile_name(*gi, m.compute_slices) : m.profile_name;
}

std::uint32_t full_multiprocessors(const Gpu& gpu) {
  std::uint32_t slices = 0, sms = 0;
  for (const auto& p : gpu.mig_profiles)
    if (p.compute_slices > slices || (p.compute_slices == slices && p.multiprocessors > sms)) {
      slices = p.compute_slices;
      sms = p.multiprocessors;
    }
  return sms;
}

std::uint32_t multiprocessors_for(const Gpu& gpu, std::uint32_t ppm) {
  const std::uint64_t full = full_multiprocessors(gpu);
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(ppm) * full + 999'999) / 1'000'000);
}

std::uint32_t compute_ppm_of(const Gpu& gpu, std::uint32_t sms) {
  const std::uint64_t full = full_multiprocessors(gpu);
  if (full == 0) return 0;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(1'000'000, sms * 1'000'000ull / full));
}

std::vector<MigShape> mig_shapes(const Gpu& gpu) {
  std::vector<MigShape> out;
  for (const MigProfile& gi : gpu.mig_profiles) {
    std::vector<MigComputeProfile> partial;
    for (const auto& c : gi.compute_profiles)
      if (c.slices < gi.compute_slices &&
          std::none_of(partial.begin(), partial.end(), [&](const auto& p) { return p.slices == c.slices; }))
        partial.push_back(c);
    std::sort(partial.begin(), partial.end(), [](const auto& a, const auto& b) { return a.slices < b.slices; });
    for (auto& c : partial) out.push_back(MigShape{&gi, std::move(c)});
    out.push_back(MigShape{&gi, full_compute_profile(gi)});
  }
  return out;
}

std::optional<MigShape> mig_shape_named(const Gpu& gpu, const std::string& name) {
  for (MigShape& s : mig_shapes(gpu))
    if (canonical_mig_profile_or_same(s.name()) == name) return std::move(s);
  for (const MigProfile& gi : gpu.mig_profiles) {
    if (!gi.compute_profiles.empty()) continue;
    for (const auto& c : derived_compute_profiles(gi)) {
      MigShape s{&gi, c};
      if (s.full() || canonical_mig_profile_or_same(s.name()) != name) continue;
      s.ci.multiprocessors = 0;  // a guess until NVML answers for a GPU instance of this profile
      s.ci.id = 0;
      return s;
    }
  }
  return std::nullopt;
}

std::optional<MigShape> mig_shape_of(const Gpu& gpu, const MigInstance& m) {
  const MigProfile* gi = gpu.profile_by_id(m.profile_id);
  if (gi == nullptr) return std::nullopt;
  if (const MigComputeProfile* c = gi->compute_profile_by_id(m.ci_profile_id); c && c->slices == m.compute_slices)
    return MigShape{gi, *c};
  if (m.compute_slices >= gi->compute_slices) return MigShape{gi, full_compute_profile(*gi)};
  return MigShape{gi, MigComputeProfile{0, m.ci_profile_id, m.compute_slices, 0, m.multiprocessors, {}, 0}};
}

std::uint64_t equal_split_bytes(const MigShape& s) {
  if (s.full() || s.gi->compute_slices == 0) return gi_memory_bytes(*s.gi);
  return s.gi->memory_mib * s.ci.slices / s.gi->compute_slices * kMiB;
}

}  // namespace gpufrac
