#include "k8s/dra_devices.hpp"

#include <array>
#include <utility>

#include "core/mig/mig_device.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

constexpr std::array<std::pair<std::string_view, std::uint64_t>, 10> kSuffixes{{
    {"Ki", 1ull << 10},
    {"Mi", 1ull << 20},
    {"Gi", 1ull << 30},
    {"Ti", 1ull << 40},
    {"Pi", 1ull << 50},
    {"k", 1000ull},
    {"M", 1000000ull},
    {"G", 1000000000ull},
    {"T", 1000000000000ull},
    {"P", 1000000000000000ull},
}};
constexpr std::uint64_t kMaxBytes = 1ull << 56;
constexpr const char* kQuantityForm = "a Kubernetes quantity of bytes, e.g. 10Gi, 4864Mi or 1073741824";

std::string mig_name(const Gpu& g, const MigInstance& m) {
  return text::cat("gpu-", g.index, "-mig-", m.gi_id, "-", m.ci_id);
}

// "gpu-0-mig-1g10gbme-19-3": DNS-label characters only; the profile id keeps +me and -me apart.
std::string profile_device_name(const Gpu& g, const std::string& name, std::uint32_t id, std::uint32_t start) {
  std::string plain;
  for (char c : name)
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
      plain += c;
    else if (c >= 'A' && c <= 'Z')
      plain += static_cast<char>(c - 'A' + 'a');
  return text::cat("gpu-", g.index, "-mig-", plain, "-", id, "-", start);
}

// A dynamic GPU's devices for one profile: the whole GPU instance at each placement, then each
// smaller compute instance profile (NVML's table, or the derived one until NVML answered) there.
void profile_devices(const Gpu& g, const MigProfile& p, std::vector<DraDevice>& out) {
  for (std::uint32_t start : p.placement_starts)
    out.push_back({profile_device_name(g, p.name, p.id, start), &g, nullptr, &p, start});
  auto table = p.compute_profiles;
  if (table.empty())  // NVML has not answered for a GPU instance of it yet: its SMs are not known
    for (MigComputeProfile c : derived_compute_profiles(p)) {
      c.multiprocessors = 0;
      table.push_back(c);
    }
  for (std::uint32_t start : p.placement_starts)
    for (const MigComputeProfile& c : table) {
      if (c.slices >= p.compute_slices) continue;
      const std::string base = profile_device_name(g, mig_device_profile_name(p, c.slices), p.id, start);
      for (std::uint32_t n = 0; n < c.max_count; ++n)
        out.push_back({text::cat(base, "-", n), &g, nullptr, &p, start, c, n});
    }
}

}  // namespace

std::uint64_t DraDevice::memory_bytes() const {
  if (profile) return ci ? equal_split_bytes(MigShape{profile, *ci}) : profile->memory_mib << 20;
  if (mig)
    if (auto shape = mig_shape_of(*gpu, *mig)) return equal_split_bytes(*shape);
  return mig ? mig->memory_bytes : gpu->memory_bytes;
}

std::pair<std::uint32_t, std::uint32_t> DraDevice::compute_share() const {
  if (profile) return {ci ? ci->slices : profile->compute_slices, profile->compute_slices};
  const MigProfile* p = mig ? gpu->profile_by_id(mig->profile_id) : nullptr;
  if (p == nullptr) return {1, 1};
  return {std::min(mig->compute_slices, p->compute_slices), p->compute_slices};
}

std::string DraDevice::device_profile() const {
  if (profile) return mig_device_profile_name(*profile, ci ? ci->slices : profile->compute_slices);
  return mig ? mig_device_profile(*gpu, *mig) : "";
}

std::vector<DraDevice> dra_devices(const Inventory& inventory, const MigConfig& mig) {
  std::vector<DraDevice> out;
  for (const auto& g : inventory.gpus) {
    if (!g.mig_enabled) out.push_back({text::cat("gpu-", g.index), &g});
    if (g.mig_enabled && mig.mode_for(g.index, g.uuid) == MigMode::dynamic) {
      for (const auto& p : g.mig_profiles) profile_devices(g, p, out);
      continue;
    }
    for (const auto& m : g.mig_instances) out.push_back({mig_name(g, m), &g, &m});
  }
  return out;
}

std::optional<DraDevice> find_dra_device(const Inventory& inventory, std::string_view name, const MigConfig& mig) {
  for (auto& d : dra_devices(inventory, mig))
    if (d.name == name) return d;
  return std::nullopt;
}

std::string k8s_quantity(std::uint64_t bytes) {
  for (auto unit : {std::pair<const char*, std::uint64_t>{"Ti", 1ull << 40}, {"Gi", 1ull << 30}, {"Mi", 1ull << 20}})
    if (bytes != 0 && bytes % unit.second == 0) return text::cat(bytes / unit.second, unit.first);
  return text::cat(bytes);
}

Result<std::uint64_t> parse_k8s_quantity(std::string_view text) {
  auto refuse = [&] {
    return user_error(text::cat(text::quote(text), " is not an amount of memory; use ", kQuantityForm));
  };
  std::uint64_t unit = 1;
  std::string_view number = text;
  for (const auto& [suffix, factor] : kSuffixes)
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      number = text.substr(0, text.size() - suffix.size());
      unit = factor;
      break;
    }
  const auto dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view() : number.substr(dot + 1);
  auto w = text::parse_u64(whole);
  if (!w || whole.size() > 17 || (dot != std::string_view::npos && (frac.empty() || frac.size() > 9))) return refuse();
  std::uint64_t scale = 1, f = 0;
  if (!frac.empty()) {
    auto parsed = text::parse_u64(frac);
    if (!parsed) return refuse();
    f = *parsed;
    for (std::size_t i = 0; i < frac.size(); ++i) scale *= 10;
  }
  if (static_cast<unsigned __int128>(*w) * unit > kMaxBytes) return refuse();
  const unsigned __int128 total =
      static_cast<unsigned __int128>(*w) * unit * scale + static_cast<unsigned __int128>(f) * unit;
  if (total % scale != 0 || total / scale > kMaxBytes) return refuse();
  return static_cast<std::uint64_t>(total / scale);
}

}  // namespace gpufrac::dra
