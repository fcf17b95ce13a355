// MIG discovery through NVML: the mode, the GPU instance profiles with their possible placements,
// and every compute instance of every GPU instance, with the MIG device UUID found by walking the
// GPU's MIG device handles (the UUID is only reachable from a MIG device handle).
// A GPU instance without a compute instance is no MIG device (nothing can run on it) and is not
// listed; a GPU instance split into several compute instances gives one MigInstance per compute
// instance, each with its own compute_slices and UUID.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/text.hpp"
#include "nvml/nvml_detail.hpp"

namespace gpufrac::nvml {

namespace {

using MigUuids = std::map<std::pair<std::uint32_t, std::uint32_t>, std::string>;  // (gi, ci) -> MIG-<uuid>

struct CiProfile {
  MigComputeProfile profile;
  bool taken = false;  // gpufrac may take it (not 1_SLICE_REV1 or 7_SLICE_NVL)
};

bool absent(nvmlReturn_t r) {
  return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT;
}

// Possible placements: the first call counts them, the second fills them.
Result<> read_placements(const Library& lib, nvmlDevice_t dev, MigProfile& p) {
  const auto call = lib.fn().nvmlDeviceGetGpuInstancePossiblePlacements_v2;
  unsigned int count = 0;
  if (auto r = lib.check(call(dev, p.id, nullptr, &count), "nvmlDeviceGetGpuInstancePossiblePlacements_v2"); !r)
    return r;
  std::vector<nvmlGpuInstancePlacement_t> placements(count);
  if (count > 0)
    if (auto r = lib.check(call(dev, p.id, placements.data(), &count), "nvmlDeviceGetGpuInstancePossiblePlacements_v2");
        !r)
      return r;
  placements.resize(std::min<std::size_t>(count, placements.size()));
  for (const auto& pl : placements) {
    p.placement_starts.push_back(pl.start);
    p.memory_slices = pl.size;
  }
  return {};
}

MigProfile profile_from(std::uint32_t index, const nvmlGpuInstanceProfileInfo_t& info, std::uint64_t device_memory) {
  MigProfile p;
  p.index = index;
  p.id = info.id;
  p.name = gi_profile_name(index, info.sliceCount, info.memorySizeMB, device_memory);
  p.compute_slices = info.sliceCount;
  p.memory_mib = info.memorySizeMB;
  p.max_count = info.instanceCount;
  p.multiprocessors = info.multiprocessorCount;
  p.copy_engines = info.copyEngineCount;
  p.decoders = info.decoderCount;
  p.encoders = info.encoderCount;
  p.jpegs = info.jpegCount;
  p.ofas = info.ofaCount;
  return p;
}

// Every profile index up to NVML_GPU_INSTANCE_PROFILE_COUNT; unsupported ones are skipped.
Result<std::vector<MigProfile>> read_profiles(const Library& lib, nvmlDevice_t dev, std::uint64_t device_memory) {
  std::vector<MigProfile> out;
  for (std::uint32_t index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_t info{};
    nvmlReturn_t r = lib.fn().nvmlDeviceGetGpuInstanceProfileInfo(dev, index, &info);
    if (absent(r)) continue;
    if (auto c = lib.check(r, text::cat("nvmlDeviceGetGpuInstanceProfileInfo(", index, ")")); !c)
      return std::unexpected(c.error());
    MigProfile p = profile_from(index, info, device_memory);
    if (auto c = read_placements(lib, dev, p); !c) return std::unexpected(c.error().wrap(p.name));
    out.push_back(std::move(p));
  }
  return out;
}

Result<MigUuids> read_mig_uuids(const Library& lib, nvmlDevice_t dev) {
  const auto& fn = lib.fn();
  unsigned int max = 0;
  if (auto r = lib.check(fn.nvmlDeviceGetMaxMigDeviceCount(dev, &max), "nvmlDeviceGetMaxMigDeviceCount"); !r)
    return std::unexpected(r.error());
  MigUuids out;
  for (unsigned int i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    nvmlReturn_t r = fn.nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mig);
    if (r == NVML_ERROR_NOT_FOUND) continue;
    if (auto c = lib.check(r, "nvmlDeviceGetMigDeviceHandleByIndex"); !c) return std::unexpected(c.error());
    unsigned int gi = 0, ci = 0;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    Result<> c = lib.check(fn.nvmlDeviceGetGpuInstanceId(mig, &gi), "nvmlDeviceGetGpuInstanceId");
    if (c) c = lib.check(fn.nvmlDeviceGetComputeInstanceId(mig, &ci), "nvmlDeviceGetComputeInstanceId");
    if (c) c = lib.check(fn.nvmlDeviceGetUUID(mig, uuid, sizeof uuid), "nvmlDeviceGetUUID");
    if (!c) return std::unexpected(c.error().wrap(text::cat("MIG device ", i)));
    uuid[sizeof uuid - 1] = '\0';
    out[{gi, ci}] = uuid;
  }
  return out;
}

// Possible placements of a compute instance profile inside a GPU instance; aligned starts when the
// library lacks the call.
Result<> read_ci_placements(const Library& lib, nvmlGpuInstance_t gi, MigComputeProfile& c, std::uint32_t gi_slices) {
  c.placement_size = c.slices;
  const auto call = lib.fn().nvmlGpuInstanceGetComputeInstancePossiblePlacements;
  if (!call) {
    for (std::uint32_t start = 0; c.slices > 0 && start + c.slices <= gi_slices; start += c.slices)
      c.placement_starts.push_back(start);
    return {};
  }
  const char* name = "nvmlGpuInstanceGetComputeInstancePossiblePlacements";
  unsigned int count = 0;
  if (auto r = lib.check(call(gi, c.id, nullptr, &count), name); !r) return r;
  std::vector<nvmlComputeInstancePlacement_t> placements(count);
  if (count > 0)
    if (auto r = lib.check(call(gi, c.id, placements.data(), &count), name); !r) return r;
  placements.resize(std::min<std::size_t>(count, placements.size()));
  for (const auto& pl : placements) {
    c.placement_starts.push_back(pl.start);
    c.placement_size = pl.size;
  }
  std::sort(c.placement_starts.begin(), c.placement_starts.end());
  return {};
}

Result<std::vector<CiProfile>> read_ci_profiles(const Library& lib, nvmlGpuInstance_t gi, std::uint32_t gi_slices) {
  std::vector<CiProfile> out;
  for (std::uint32_t index = 0; index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t r = lib.fn().nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (absent(r)) continue;
    if (auto c = lib.check(r, text::cat("nvmlGpuInstanceGetComputeInstanceProfileInfo(", index, ")")); !c)
      return std::unexpected(c.error());
    bool seen = false;
    for (const auto& p : out) seen = seen || p.profile.id == info.id;
    if (seen) continue;
    CiProfile cp{
        {index, info.id, info.sliceCount, info.instanceCount, info.multiprocessorCount, {}, 0},
        index != NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 && index != NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL};
    if (auto c = read_ci_placements(lib, gi, cp.profile, gi_slices); !c)
      return std::unexpected(c.error().wrap(text::cat("compute instance profile ", info.id)));
    out.push_back(std::move(cp));
  }
  return out;
}

// The compute instances of profile `cp` in GPU instance `gi`, one MigInstance each.
Result<> read_compute_instances(const Library& lib, nvmlGpuInstance_t handle, const nvmlGpuInstanceInfo_t& gi,
                                const CiProfile& cp, const MigUuids& uuids, Gpu& g) {
  const auto& fn = lib.fn();
  std::vector<nvmlComputeInstance_t> cis(std::max(cp.profile.max_count, 1u));
  unsigned int count = static_cast<unsigned int>(cis.size());
  if (auto r = lib.check(fn.nvmlGpuInstanceGetComputeInstances(handle, cp.profile.id, cis.data(), &count),
                         "nvmlGpuInstanceGetComputeInstances");
      !r)
    return r;
  const MigProfile* profile = g.profile_by_id(gi.profileId);
  for (unsigned int i = 0; i < count && i < cis.size(); ++i) {
    nvmlComputeInstanceInfo_t ci{};
    if (auto r = lib.check(fn.nvmlComputeInstanceGetInfo_v2(cis[i], &ci), "nvmlComputeInstanceGetInfo_v2"); !r)
      return r;
    auto uuid = uuids.find({gi.id, ci.id});
    if (uuid == uuids.end())
      return internal_error(text::cat("no MIG device handle has GPU instance ", gi.id, " compute instance ", ci.id));
    MigInstance m;
    m.gi_id = gi.id;
    m.ci_id = ci.id;
    m.profile_id = gi.profileId;
    m.profile_name = profile->name;
    m.uuid = uuid->second;
    m.memory_bytes = profile->memory_mib * kMiB;  // see read_mig() in nvml_detail.hpp
    m.placement = {gi.placement.start, gi.placement.size};
    m.compute_slices = cp.profile.slices;
    m.ci_profile_id = cp.profile.id;
    m.ci_start = ci.placement.start;
    m.multiprocessors = cp.profile.multiprocessors;
    g.mig_instances.push_back(std::move(m));
  }
  return {};
}

// The MIG devices (compute instances) of one GPU instance.
Result<> read_gpu_instance(const Library& lib, nvmlGpuInstance_t handle, const MigUuids& uuids, Gpu& g) {
  nvmlGpuInstanceInfo_t gi{};
  if (auto r = lib.check(lib.fn().nvmlGpuInstanceGetInfo(handle, &gi), "nvmlGpuInstanceGetInfo"); !r) return r;
  MigProfile* profile = nullptr;
  for (auto& p : g.mig_profiles)
    if (p.id == gi.profileId) profile = &p;
  if (!profile) return internal_error(text::cat("GPU instance ", gi.id, " has unknown profile id ", gi.profileId));
  auto ci_profiles = read_ci_profiles(lib, handle, profile->compute_slices);
  if (!ci_profiles) return std::unexpected(ci_profiles.error().wrap(text::cat("GPU instance ", gi.id)));
  if (profile->compute_profiles.empty()) {  // what NVML answers for every GPU instance of this profile
    for (const CiProfile& cp : *ci_profiles)
      if (cp.taken) profile->compute_profiles.push_back(cp.profile);
    std::sort(profile->compute_profiles.begin(), profile->compute_profiles.end(),
              [](const auto& a, const auto& b) { return a.slices < b.slices; });
  }
  for (const CiProfile& cp : *ci_profiles)
    if (auto r = read_compute_instances(lib, handle, gi, cp, uuids, g); !r) return r;
  return {};
}

Result<> read_instances(const Library& lib, nvmlDevice_t dev, Gpu& g) {
  auto uuids = read_mig_uuids(lib, dev);
  if (!uuids) return std::unexpected(uuids.error());
  return for_each_gpu_instance(lib, dev, g.mig_profiles,
                               [&](nvmlGpuInstance_t gi) { return read_gpu_instance(lib, gi, *uuids, g); });
}

}  // namespace

Result<> for_each_gpu_instance(const Library& lib, nvmlDevice_t dev, const std::vector<MigProfile>& profiles,
                               const std::function<Result<>(nvmlGpuInstance_t)>& visit) {
  for (const MigProfile& p : profiles) {
    std::vector<nvmlGpuInstance_t> gis(std::max(p.max_count, 1u));
    unsigned int count = static_cast<unsigned int>(gis.size());
    if (auto r =
            lib.check(lib.fn().nvmlDeviceGetGpuInstances(dev, p.id, gis.data(), &count), "nvmlDeviceGetGpuInstances");
        !r)
      return std::unexpected(r.error().wrap(p.name));
    for (unsigned int i = 0; i < count && i < gis.size(); ++i)
      if (auto r = visit(gis[i]); !r) return r;
  }
  return {};
}

Result<> read_mig(const Library& lib, nvmlDevice_t dev, Gpu& g) {
  if (!lib.fn().nvmlDeviceGetMigMode) return {};
  unsigned int current = 0, pending = 0;
  nvmlReturn_t r = lib.fn().nvmlDeviceGetMigMode(dev, &current, &pending);
  if (r == NVML_ERROR_NOT_SUPPORTED) return {};
  if (auto c = lib.check(r, "nvmlDeviceGetMigMode"); !c) return c;
  g.mig_capable = true;
  g.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
  g.mig_pending = pending == NVML_DEVICE_MIG_ENABLE;
  if (!g.mig_enabled) return {};  // profiles and instances exist only while MIG mode is on
  if (auto missing = lib.missing_mig_symbol(); !missing.empty())
    return internal_error(text::cat("NVIDIA driver library ", lib.path(), " lacks ", missing,
                                    ", which a GPU in MIG mode needs; update the driver"));
  auto profiles = read_profiles(lib, dev, g.memory_bytes);
  if (!profiles) return std::unexpected(profiles.error());
  g.mig_profiles = std::move(*profiles);
  return read_instances(lib, dev, g);
}

std::string gi_profile_name(std::uint32_t index, std::uint32_t slices, std::uint64_t memory_mib,
                            std::uint64_t device_memory_bytes) {
  std::uint64_t gb = 0;
  if (device_memory_bytes > 0) {
    std::uint64_t eighths = (memory_mib * kMiB * 8 + device_memory_bytes - 1) / device_memory_bytes;
    std::uint64_t total_gib = (device_memory_bytes + kGiB - 1) / kGiB;
    gb = (eighths * total_gib + 4) / 8;  // round half up, as math.Round does for positive values
  }
  const char* suffix = "";
  switch (index) {
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1:
      suffix = "+me";
      break;
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
      suffix = "+me.all";
      break;
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX:
      suffix = "+gfx";
      break;
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
      suffix = "-me";
      break;
    default:
      break;
  }
  return text::cat(slices, "g.", gb, "gb", suffix);
}

}  // namespace gpufrac::nvml
