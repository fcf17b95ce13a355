#include "fake_mig_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "fake_pidns.hpp"

namespace gpufrac::fake_nvml {

using nlohmann::json;

namespace {

json ci_json(const nvmlComputeInstance_st& ci) {
  const auto& slots = ci.gi->gpu->mig.slots;
  const auto slot = std::find(slots.begin(), slots.end(), &ci) - slots.begin();
  return {{"id", ci.id}, {"profile_id", ci.profile_id}, {"slices", ci.slices}, {"start", ci.start}, {"uuid", ci.uuid},
          {"slot", slot}};
}

json gpu_json(const PhysicalGpu& gpu) {
  json gis = json::array();
  for (const auto& gi : gpu.mig.gpu_instances) {
    json cis = json::array();
    for (const auto& ci : gi->compute_instances) cis.push_back(ci_json(*ci));
    gis.push_back({{"id", gi->id},
                   {"profile_id", gi->profile.id},
                   {"start", gi->placement.start},
                   {"compute_instances", std::move(cis)}});
  }
  return {{"uuid", gpu.model.uuid},
          {"mig_current", gpu.mig.current},
          {"mig_pending", gpu.mig.pending},
          {"gpu_instances", std::move(gis)}};
}

// Brings one compute instance list in line with the file, keeping objects that still exist.
void sync_compute_instances(nvmlGpuInstance_st& gi, const json& list) {
  std::vector<std::unique_ptr<nvmlComputeInstance_st>> kept;
  for (const json& c : list) {
    const auto id = c.at("id").get<std::uint32_t>();
    const auto uuid = c.at("uuid").get<std::string>();
    auto it = std::find_if(gi.compute_instances.begin(), gi.compute_instances.end(),
                           [&](const auto& ci) { return ci && ci->id == id && ci->uuid == uuid; });
    std::unique_ptr<nvmlComputeInstance_st> ci;
    if (it != gi.compute_instances.end()) {
      ci = std::move(*it);
    } else {
      ci = std::make_unique<nvmlComputeInstance_st>();
      ci->gi = &gi;
      ci->id = id;
      ci->uuid = uuid;
      ci->slices = c.at("slices").get<std::uint32_t>();
      ci->profile_id = c.at("profile_id").get<std::uint32_t>();
      ci->device.gpu = gi.gpu;
      ci->device.mig = ci.get();
    }
    ci->start = c.at("start").get<std::uint32_t>();
    const auto slot = c.at("slot").get<std::size_t>();
    if (slot < gi.gpu->mig.slots.size()) gi.gpu->mig.slots[slot] = ci.get();
    kept.push_back(std::move(ci));
  }
  gi.compute_instances = std::move(kept);
}

Result<> sync_gpu(PhysicalGpu& gpu, const json& j) {
  gpu.mig.current = j.at("mig_current").get<bool>();
  gpu.mig.pending = j.at("mig_pending").get<bool>();
  std::fill(gpu.mig.slots.begin(), gpu.mig.slots.end(), nullptr);
  std::vector<std::unique_ptr<nvmlGpuInstance_st>> kept;
  for (const json& g : j.at("gpu_instances")) {
    const auto id = g.at("id").get<std::uint32_t>(), profile_id = g.at("profile_id").get<std::uint32_t>();
    const auto start = g.at("start").get<std::uint32_t>();
    const MigProfile* p = gpu.profile_by_id(profile_id);
    if (!p) return internal_error(text::cat("GPU ", gpu.model.uuid, ": no profile id ", profile_id));
    auto it = std::find_if(gpu.mig.gpu_instances.begin(), gpu.mig.gpu_instances.end(), [&](const auto& gi) {
      return gi && gi->id == id && gi->profile.id == profile_id && gi->placement.start == start;
    });
    std::unique_ptr<nvmlGpuInstance_st> gi;
    if (it != gpu.mig.gpu_instances.end()) {
      gi = std::move(*it);
    } else {
      gi = std::make_unique<nvmlGpuInstance_st>();
      gi->gpu = &gpu;
      gi->id = id;
      gi->profile = *p;
      gi->placement = {start, p->memory_slices};
    }
    sync_compute_instances(*gi, g.at("compute_instances"));
    kept.push_back(std::move(gi));
  }
  gpu.mig.gpu_instances = std::move(kept);
  return {};
}

Result<> apply_text(State& state, const std::string& text) {
  try {
    json doc = json::parse(text);
    const json& gpus = doc.at("gpus");
    if (gpus.size() != state.gpus.size())
      return internal_error(
          text::cat(state.state_file, ": ", gpus.size(), " GPUs, the machine has ", state.gpus.size()));
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (gpus[i].at("uuid").get<std::string>() != state.gpus[i]->model.uuid)
        return internal_error(state.state_file + ": GPU " + std::to_string(i) + " is another GPU than the machine's");
      if (auto r = sync_gpu(*state.gpus[i], gpus[i]); !r) return r;
    }
    state.serial = doc.at("serial").get<std::uint64_t>();
    return {};
  } catch (const std::exception& e) {
    return internal_error(state.state_file + ": not a fake NVML state file: " + e.what());
  }
}

Result<FileStamp> stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return sys_error("cannot stat " + path);
  return FileStamp{static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                   static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

Result<> reload(State& state) {
  auto text = fs::read_file(state.state_file, 16u << 20);
  if (!text) return std::unexpected(text.error());
  auto stamp = stamp_of(state.state_file);
  if (!stamp) return std::unexpected(stamp.error());
  if (auto r = apply_text(state, *text); !r) return r;
  state.stamp = *stamp;
  return {};
}

}  // namespace

Result<StateFileLock> StateFileLock::acquire(const State& state) {
  if (state.state_file.empty()) return StateFileLock(-1);
  const std::string path = state.state_file + ".lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("cannot open " + path);
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      ::close(fd);
      return sys_error("cannot lock " + path);
    }
  return StateFileLock(fd);
}

StateFileLock::~StateFileLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<> attach_state_file(State& state, const std::string& path) {
  state.state_file = path;
  record_host_pidns(path);
  auto lock = StateFileLock::acquire(state);
  if (!lock) return std::unexpected(lock.error());
  if (fs::exists(path)) return reload(state);
  return save_to_file(state);
}

Result<> refresh_from_file(State& state) {
  if (state.state_file.empty()) return {};
  auto stamp = stamp_of(state.state_file);
  if (!stamp) return std::unexpected(stamp.error());
  if (*stamp == state.stamp) return {};
  return reload(state);
}

Result<> save_to_file(State& state) {
  if (state.state_file.empty()) return {};
  json gpus = json::array();
  for (const auto& g : state.gpus) gpus.push_back(gpu_json(*g));
  json doc{{"serial", state.serial}, {"gpus", std::move(gpus)}};
  if (auto r = fs::write_file_atomic(state.state_file, doc.dump(1) + "\n", 0644); !r) return r;
  auto stamp = stamp_of(state.state_file);
  if (!stamp) return std::unexpected(stamp.error());
  state.stamp = *stamp;
  return {};
}

}  // namespace gpufrac::fake_nvml
