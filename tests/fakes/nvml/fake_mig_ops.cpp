#include "fake_mig_ops.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/text.hpp"

namespace gpufrac::fake_nvml {

namespace {

std::uint32_t full_compute(const PhysicalGpu& gpu) {
  std::uint32_t n = 0;
  for (const auto& p : gpu.profile_table) n = std::max(n, p.compute_slices);
  return n;
}

std::uint32_t used_compute(const PhysicalGpu& gpu) {
  std::uint32_t n = 0;
  for (const auto& gi : gpu.mig.gpu_instances) n += gi->profile.compute_slices;
  return n;
}

std::uint32_t count_of(const PhysicalGpu& gpu, std::uint32_t profile_id) {
  return static_cast<std::uint32_t>(std::count_if(gpu.mig.gpu_instances.begin(), gpu.mig.gpu_instances.end(),
                                                  [&](const auto& gi) { return gi->profile.id == profile_id; }));
}

bool placement_free(const PhysicalGpu& gpu, const MigPlacement& pl) {
  return std::none_of(gpu.mig.gpu_instances.begin(), gpu.mig.gpu_instances.end(),
                      [&](const auto& gi) { return gi->placement.overlaps(pl); });
}

std::uint32_t smallest_free_gi_id(const PhysicalGpu& gpu) {
  for (std::uint32_t id = 1;; ++id)
    if (std::none_of(gpu.mig.gpu_instances.begin(), gpu.mig.gpu_instances.end(),
                     [&](const auto& gi) { return gi->id == id; }))
      return id;
}

std::uint32_t count_of_ci(const nvmlGpuInstance_st& gi, std::uint32_t ci_profile_id) {
  return static_cast<std::uint32_t>(std::count_if(gi.compute_instances.begin(), gi.compute_instances.end(),
                                                  [&](const auto& ci) { return ci->profile_id == ci_profile_id; }));
}

bool ci_placement_free(const nvmlGpuInstance_st& gi, std::uint32_t start, std::uint32_t size) {
  return std::none_of(gi.compute_instances.begin(), gi.compute_instances.end(),
                      [&](const auto& ci) { return start < ci->start + ci->slices && ci->start < start + size; });
}

bool listed(const char* env, std::string_view name) {
  const char* list = std::getenv(env);
  if (!list) return false;
  for (const auto& item : text::split(list, ','))
    if (item == name) return true;
  return false;
}

bool busy(const std::string& uuid) {
  return listed(kBusyEnv, uuid);
}

// FNV-1a, then the splitmix64 finaliser so that near seeds give unrelated UUIDs.
std::uint64_t mix(std::string_view s, std::uint64_t h) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace

bool injected_failure(const char* function) {
  return listed(kFailEnv, function);
}

nvmlReturn_t create_gpu_instance(State& /*state*/, PhysicalGpu& gpu, const MigProfile& p,
                                 std::optional<std::uint32_t> start, nvmlGpuInstance_st** out) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (start && std::find(p.placement_starts.begin(), p.placement_starts.end(), *start) == p.placement_starts.end())
    return NVML_ERROR_INVALID_ARGUMENT;
  if (count_of(gpu, p.id) >= p.max_count || used_compute(gpu) + p.compute_slices > full_compute(gpu))
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  std::optional<std::uint32_t> chosen;
  if (start) {
    if (placement_free(gpu, {*start, p.memory_slices})) chosen = start;
  } else {
    for (auto it = p.placement_starts.rbegin(); it != p.placement_starts.rend() && !chosen; ++it)
      if (placement_free(gpu, {*it, p.memory_slices})) chosen = *it;
  }
  if (!chosen) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  *out = add_gpu_instance(gpu, smallest_free_gi_id(gpu), p, *chosen);
  return NVML_SUCCESS;
}

nvmlReturn_t create_compute_instance(State& state, nvmlGpuInstance_st& gi, std::uint32_t ci_profile_id,
                                     std::optional<std::uint32_t> start, nvmlComputeInstance_st** out) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  const MigComputeProfile* p = ci_profile_by_id(gi, ci_profile_id);
  if (!p) return NVML_ERROR_NOT_SUPPORTED;
  const auto& starts = p->placement_starts;
  if (start && std::find(starts.begin(), starts.end(), *start) == starts.end()) return NVML_ERROR_INVALID_ARGUMENT;
  if (count_of_ci(gi, p->id) >= p->max_count) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  std::optional<std::uint32_t> chosen;
  for (std::uint32_t s : starts)
    if ((!start || s == *start) && !chosen && ci_placement_free(gi, s, p->slices)) chosen = s;
  if (!chosen) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  std::uint32_t id = 0;
  while (std::any_of(gi.compute_instances.begin(), gi.compute_instances.end(),
                     [&](const auto& ci) { return ci->id == id; }))
    ++id;
  nvmlComputeInstance_st* ci =
      add_compute_instance(gi, id, *p, *chosen, mig_uuid_for(gi.gpu->model.uuid, ++state.serial));
  if (!ci) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  *out = ci;
  return NVML_SUCCESS;
}

nvmlReturn_t destroy_compute_instance(nvmlComputeInstance_st& ci) {
  if (busy(ci.uuid)) return NVML_ERROR_IN_USE;
  auto& slots = ci.gi->gpu->mig.slots;
  std::replace(slots.begin(), slots.end(), &ci, static_cast<nvmlComputeInstance_st*>(nullptr));
  std::erase_if(ci.gi->compute_instances, [&](const auto& p) { return p.get() == &ci; });
  return NVML_SUCCESS;
}

nvmlReturn_t destroy_gpu_instance(nvmlGpuInstance_st& gi) {
  if (!gi.compute_instances.empty()) return NVML_ERROR_IN_USE;
  std::erase_if(gi.gpu->mig.gpu_instances, [&](const auto& p) { return p.get() == &gi; });
  return NVML_SUCCESS;
}

unsigned int gpu_instance_capacity(const PhysicalGpu& gpu, const MigProfile& p) {
  std::vector<MigPlacement> taken;
  for (const auto& gi : gpu.mig.gpu_instances) taken.push_back(gi->placement);
  unsigned int n = 0;
  std::uint32_t count = count_of(gpu, p.id), compute = used_compute(gpu);
  for (std::uint32_t start : p.placement_starts) {
    const MigPlacement pl{start, p.memory_slices};
    if (count + n >= p.max_count || compute + p.compute_slices > full_compute(gpu)) break;
    if (std::any_of(taken.begin(), taken.end(), [&](const MigPlacement& t) { return t.overlaps(pl); })) continue;
    taken.push_back(pl);
    compute += p.compute_slices;
    ++n;
  }
  return n;
}

unsigned int compute_instance_capacity(const nvmlGpuInstance_st& gi, const MigComputeProfile& p) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> taken;  // start, size
  for (const auto& ci : gi.compute_instances) taken.emplace_back(ci->start, ci->slices);
  unsigned int n = 0;
  const std::uint32_t count = count_of_ci(gi, p.id);
  for (std::uint32_t start : p.placement_starts) {
    if (count + n >= p.max_count) break;
    if (std::any_of(taken.begin(), taken.end(),
                    [&](const auto& t) { return start < t.first + t.second && t.first < start + p.slices; }))
      continue;
    taken.emplace_back(start, p.slices);
    ++n;
  }
  return n;
}

std::string mig_uuid_for(const std::string& gpu_uuid, std::uint64_t serial) {
  const std::string seed = text::cat(gpu_uuid, "/", serial);
  const std::uint64_t a = mix(seed, 0xcbf29ce484222325ull), b = mix(seed, 0x84222325cbf29ce4ull);
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  const std::string h(hex);
  return text::cat("MIG-", h.substr(0, 8), "-", h.substr(8, 4), "-", h.substr(12, 4), "-", h.substr(16, 4), "-",
                   h.substr(20, 12));
}

}  // namespace gpufrac::fake_nvml
