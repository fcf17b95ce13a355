#include "nvml/mig_change.hpp"

#include <algorithm>

#include "core/text.hpp"
#include "nvml/nvml_detail.hpp"

namespace gpufrac::nvml {

namespace {

bool ignored_ci_profile(std::uint32_t index) {
  return index == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 || index == NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL;
}

// The compute instance profiles a GPU instance offers (ids, deduplicated), skipping the two above.
Result<std::vector<nvmlComputeInstanceProfileInfo_t>> ci_profiles(const Library& lib, nvmlGpuInstance_t gi) {
  std::vector<nvmlComputeInstanceProfileInfo_t> out;
  for (std::uint32_t index = 0; index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++index) {
    if (ignored_ci_profile(index)) continue;
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t r = lib.fn().nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (auto c = lib.check(r, text::cat("nvmlGpuInstanceGetComputeInstanceProfileInfo(", index, ")")); !c)
      return std::unexpected(c.error());
    if (std::none_of(out.begin(), out.end(), [&](const auto& p) { return p.id == info.id; })) out.push_back(info);
  }
  return out;
}

// The compute instance handles of a GPU instance, over all its compute instance profiles.
Result<std::vector<nvmlComputeInstance_t>> compute_instances(const Library& lib, nvmlGpuInstance_t gi) {
  auto profiles = ci_profiles(lib, gi);
  if (!profiles) return std::unexpected(profiles.error());
  std::vector<nvmlComputeInstance_t> out;
  for (const auto& p : *profiles) {
    std::vector<nvmlComputeInstance_t> cis(std::max(p.instanceCount, 1u) + 8);
    unsigned int count = static_cast<unsigned int>(cis.size());
    if (auto r = lib.check(lib.fn().nvmlGpuInstanceGetComputeInstances(gi, p.id, cis.data(), &count),
                           "nvmlGpuInstanceGetComputeInstances");
        !r)
      return std::unexpected(r.error());
    out.insert(out.end(), cis.begin(), cis.begin() + std::min<std::size_t>(count, cis.size()));
  }
  return out;
}

Result<GpuInstanceInfo> describe(const Library& lib, nvmlGpuInstance_t handle) {
  nvmlGpuInstanceInfo_t info{};
  if (auto r = lib.check(lib.fn().nvmlGpuInstanceGetInfo(handle, &info), "nvmlGpuInstanceGetInfo"); !r)
    return std::unexpected(r.error());
  GpuInstanceInfo out{info.id, info.profileId, {info.placement.start, info.placement.size}, {}};
  auto cis = compute_instances(lib, handle);
  if (!cis) return std::unexpected(cis.error().wrap(text::cat("GPU instance ", info.id)));
  for (nvmlComputeInstance_t ci : *cis) {
    nvmlComputeInstanceInfo_t ci_info{};
    if (auto r = lib.check(lib.fn().nvmlComputeInstanceGetInfo_v2(ci, &ci_info), "nvmlComputeInstanceGetInfo_v2"); !r)
      return std::unexpected(r.error());
    out.compute_instances.push_back(ci_info.id);
  }
  std::sort(out.compute_instances.begin(), out.compute_instances.end());
  return out;
}

// The compute instance profile id of `slices` compute slices a GPU instance offers (the most SMs).
Result<std::uint32_t> ci_profile_of(const Library& lib, nvmlGpuInstance_t gi, std::uint32_t slices) {
  auto profiles = ci_profiles(lib, gi);
  if (!profiles) return std::unexpected(profiles.error());
  const nvmlComputeInstanceProfileInfo_t* best = nullptr;
  for (const auto& p : *profiles)
    if (p.sliceCount == slices && (best == nullptr || p.multiprocessorCount > best->multiprocessorCount)) best = &p;
  if (best != nullptr) return best->id;
  return user_error(text::cat("the GPU instance offers no compute instance profile of ", slices, " slices"));
}

// The size NVML gives the placement at `start` of a compute instance profile (its slices when the
// driver cannot list placements).
std::uint32_t placement_size(const Library& lib, nvmlGpuInstance_t gi, std::uint32_t profile_id, std::uint32_t start,
                             std::uint32_t slices) {
  const auto call = lib.fn().nvmlGpuInstanceGetComputeInstancePossiblePlacements;
  nvmlComputeInstancePlacement_t pl[16]{};
  unsigned int count = 16;
  if (call && call(gi, profile_id, pl, &count) == NVML_SUCCESS)
    for (unsigned int i = 0; i < count && i < 16; ++i)
      if (pl[i].start == start) return pl[i].size;
  return slices;
}

// Makes the compute instance in `gi`; returns its id.
Result<std::uint32_t> make_compute_instance(const Library& lib, nvmlGpuInstance_t gi, const ComputeInstanceSpec& spec) {
  auto profile = spec.profile_id ? Result<std::uint32_t>(*spec.profile_id) : ci_profile_of(lib, gi, spec.slices);
  if (!profile) return std::unexpected(profile.error());
  const auto& fn = lib.fn();
  nvmlComputeInstance_t ci = nullptr;
  Result<> made;
  if (spec.start && fn.nvmlGpuInstanceCreateComputeInstanceWithPlacement) {
    const nvmlComputeInstancePlacement_t at{*spec.start, placement_size(lib, gi, *profile, *spec.start, spec.slices)};
    made = lib.check(fn.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gi, *profile, &at, &ci),
                     "nvmlGpuInstanceCreateComputeInstanceWithPlacement");
  } else {
    made =
        lib.check(fn.nvmlGpuInstanceCreateComputeInstance(gi, *profile, &ci), "nvmlGpuInstanceCreateComputeInstance");
  }
  nvmlComputeInstanceInfo_t info{};
  if (made) made = lib.check(fn.nvmlComputeInstanceGetInfo_v2(ci, &info), "nvmlComputeInstanceGetInfo_v2");
  if (!made) return std::unexpected(made.error());
  return info.id;
}

}  // namespace

Result<nvmlDevice_t> mig_device(const Library& lib, const std::string& gpu_uuid) {
  if (auto missing = lib.missing_mig_change_symbol(); !missing.empty())
    return internal_error(text::cat("NVIDIA driver library ", lib.path(), " lacks ", missing,
                                    ", which dynamic MIG needs; update the driver or use mig.mode static"));
  nvmlDevice_t dev = nullptr;
  if (auto r = lib.check(lib.fn().nvmlDeviceGetHandleByUUID(gpu_uuid.c_str(), &dev), "nvmlDeviceGetHandleByUUID"); !r)
    return std::unexpected(r.error().wrap(gpu_uuid));
  return dev;
}

Result<std::vector<GpuInstanceInfo>> list_gpu_instances(const Library& lib, nvmlDevice_t dev,
                                                        const std::vector<MigProfile>& profiles) {
  std::vector<GpuInstanceInfo> out;
  auto listed = for_each_gpu_instance(lib, dev, profiles, [&](nvmlGpuInstance_t gi) -> Result<> {
    auto info = describe(lib, gi);
    if (!info) return std::unexpected(info.error());
    out.push_back(std::move(*info));
    return {};
  });
  if (!listed) return std::unexpected(listed.error());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

Result<CreatedInstance> create_mig_instance(const Library& lib, nvmlDevice_t dev, const MigProfile& p,
                                            std::uint32_t start, const ComputeInstanceSpec& spec,
                                            const std::function<void(std::uint32_t)>& after_gpu_instance) {
  const std::string what = text::cat(p.name, "@", start);
  const nvmlGpuInstancePlacement_t placement{start, p.memory_slices};
  nvmlGpuInstance_t gi = nullptr;
  if (auto r = lib.check(lib.fn().nvmlDeviceCreateGpuInstanceWithPlacement(dev, p.id, &placement, &gi),
                         "nvmlDeviceCreateGpuInstanceWithPlacement");
      !r)
    return std::unexpected(r.error().wrap("creating MIG GPU instance " + what));
  nvmlGpuInstanceInfo_t info{};
  if (auto r = lib.check(lib.fn().nvmlGpuInstanceGetInfo(gi, &info), "nvmlGpuInstanceGetInfo"); !r)
    return std::unexpected(r.error().wrap("reading new GPU instance " + what));
  if (after_gpu_instance) after_gpu_instance(info.id);
  auto ci = make_compute_instance(lib, gi, spec);
  if (!ci) {
    Error e = ci.error();
    if (auto undo = lib.check(lib.fn().nvmlGpuInstanceDestroy(gi), "nvmlGpuInstanceDestroy"); !undo)
      e.message += "; rolling back, " + undo.error().message;
    return std::unexpected(std::move(e.wrap(
        text::cat("creating the compute instance of ", what, " (GPU instance ", info.id, ", destroyed again)"))));
  }
  return CreatedInstance{info.id, *ci};
}

Result<CreatedInstance> add_compute_instance(const Library& lib, nvmlDevice_t dev, std::uint32_t id,
                                             const ComputeInstanceSpec& spec) {
  const std::string what = text::cat("a compute instance of ", spec.slices, spec.slices == 1 ? " slice" : " slices",
                                     " in MIG GPU instance ", id);
  nvmlGpuInstance_t gi = nullptr;
  if (auto r = lib.check(lib.fn().nvmlDeviceGetGpuInstanceById(dev, id, &gi), "nvmlDeviceGetGpuInstanceById"); !r)
    return std::unexpected(r.error().wrap("creating " + what));
  auto ci = make_compute_instance(lib, gi, spec);
  if (!ci) return std::unexpected(ci.error().wrap("creating " + what));
  return CreatedInstance{id, *ci};
}

Result<> destroy_gpu_instance(const Library& lib, nvmlDevice_t dev, std::uint32_t id) {
  const std::string what = text::cat("MIG GPU instance ", id);
  nvmlGpuInstance_t gi = nullptr;
  if (auto r = lib.check(lib.fn().nvmlDeviceGetGpuInstanceById(dev, id, &gi), "nvmlDeviceGetGpuInstanceById"); !r)
    return std::unexpected(r.error().wrap("destroying " + what));
  auto cis = compute_instances(lib, gi);
  if (!cis) return std::unexpected(cis.error().wrap("destroying " + what));
  for (nvmlComputeInstance_t ci : *cis) {
    nvmlReturn_t rc = lib.fn().nvmlComputeInstanceDestroy(ci);
    if (rc == NVML_ERROR_IN_USE)
      return internal_error(text::cat("destroying ", what, ": a compute instance is in use (", lib.error_text(rc),
                                      "): processes outside gpufrac run on it"));
    if (auto r = lib.check(rc, "nvmlComputeInstanceDestroy"); !r)
      return std::unexpected(r.error().wrap("destroying " + what));
  }
  if (auto r = lib.check(lib.fn().nvmlGpuInstanceDestroy(gi), "nvmlGpuInstanceDestroy"); !r)
    return std::unexpected(r.error().wrap("destroying " + what));
  return {};
}

}  // namespace gpufrac::nvml
