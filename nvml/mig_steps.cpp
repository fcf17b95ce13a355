#include "nvml/mig_steps.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <ctime>

#include "core/fault.hpp"
#include "core/fs.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"
#include "nvml/mig_made.hpp"

namespace gpufrac {

namespace {

Result<std::vector<nvml::GpuInstanceInfo>> gpu_instances(const MigDriver& d, nvmlDevice_t device, const Gpu& gpu) {
  return nvml::list_gpu_instances(d.lib(), device, gpu.mig_profiles);
}

}  // namespace

namespace {

// Writes the compute instances (gi, ci ids) down as made, by their UUIDs in a fresh inventory.
Result<> adopt_made(const Config& cfg, const std::string& gpu_uuid,
                    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& ids) {
  if (ids.empty()) return {};
  auto inv = discover(cfg);
  if (!inv) return std::unexpected(inv.error().wrap("reading adopted compute instances"));
  std::vector<std::string> uuids;
  if (const Gpu* g = inv->gpu_by_uuid(gpu_uuid))
    for (const MigInstance& m : g->mig_instances)
      if (std::find(ids.begin(), ids.end(), std::pair{m.gi_id, m.ci_id}) != ids.end()) uuids.push_back(m.uuid);
  return add_mig_made(cfg, gpu_uuid, uuids);
}

// What a journal left: the compute instances it made (to adopt) and what to say.
Result<std::string> undo_journal(const MigDriver& d, nvmlDevice_t device, const Gpu& gpu, const MigJournal& j,
                                 std::vector<std::pair<std::uint32_t, std::uint32_t>>& made) {
  auto gis = gpu_instances(d, device, gpu);
  if (!gis) return std::unexpected(gis.error());
  const std::string what = text::cat(j.profile, "@", j.start);
  std::string done = text::cat("journal of ", what, " for ", j.container, ": nothing left over");
  for (const auto& gi : *gis) {
    if (j.gi ? gi.id != *j.gi : gi.profile_id != j.profile_id || gi.placement.start != j.start) continue;
    for (std::uint32_t ci : gi.compute_instances)
      if (std::find(j.cis_before.begin(), j.cis_before.end(), ci) == j.cis_before.end()) made.emplace_back(gi.id, ci);
    if (j.gi) {
      if (!made.empty())
        done = text::cat("journal of a compute instance in GPU instance ", gi.id, ": compute instance ",
                         made.front().second, " is whole, kept");
      break;
    }
    if (!gi.compute_instances.empty()) {
      done = text::cat("journal of ", what, ": GPU instance ", gi.id, " is whole, kept");
      break;
    }
    if (auto r = nvml::destroy_gpu_instance(d.lib(), device, gi.id); !r) return std::unexpected(r.error());
    done = text::cat("destroyed half-made GPU instance ", gi.id, " (", what, ") of ", j.container);
  }
  return done;
}

}  // namespace

Result<std::string> recover_mig_journal(const MigDriver& d, nvmlDevice_t device, const Config& cfg, const Gpu& gpu) {
  auto journal = read_mig_journal(cfg, gpu.uuid);
  if (!journal) return std::unexpected(journal.error());
  if (!*journal) return std::string();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> made;
  auto done = undo_journal(d, device, gpu, **journal, made);
  if (!done) return std::unexpected(done.error());
  if (auto r = adopt_made(cfg, gpu.uuid, made); !r) return std::unexpected(r.error());
  if (auto r = remove_mig_journal(cfg, gpu.uuid); !r) return std::unexpected(r.error());
  log::info("GPU " + gpu.uuid + ": " + *done);
  return *done;
}

Result<std::vector<MigForeign>> foreign_gpu_instances(const MigDriver& d, nvmlDevice_t device, const Gpu& gpu) {
  auto gis = gpu_instances(d, device, gpu);
  if (!gis) return std::unexpected(gis.error());
  std::vector<MigForeign> out;
  for (const auto& gi : *gis)
    if (gi.compute_instances.empty()) out.push_back(MigForeign{gi.id, gi.profile_id, gi.placement});
  return out;
}

Result<> destroy_gpu_instances(const MigDriver& d, nvmlDevice_t device, const Gpu& gpu,
                               const std::vector<MigDestroyStep>& steps) {
  for (const MigDestroyStep& s : steps) {
    const std::string what =
        text::cat(placement_text(s.profile_name, s.placement), " (GPU ", gpu.index, " gi ", s.gi, ")");
    if (auto r = nvml::destroy_gpu_instance(d.lib(), device, s.gi); !r)
      return std::unexpected(r.error().wrap("destroying idle MIG instance " + what));
    auto left = gpu_instances(d, device, gpu);
    if (!left) return std::unexpected(left.error());
    if (std::any_of(left->begin(), left->end(), [&](const auto& gi) { return gi.id == s.gi; }))
      return internal_error("GPU instance " + what + " is still there after nvmlGpuInstanceDestroy");
    log::info("destroyed idle MIG instance " + what);
  }
  return {};
}

Result<nvml::CreatedInstance> create_journaled(const MigDriver& d, nvmlDevice_t device, const Config& cfg,
                                               const Gpu& gpu, const MigCreateStep& step,
                                               const std::string& container) {
  const MigProfile* profile = gpu.profile_by_id(step.profile_id);
  if (!profile) return internal_error(text::cat("GPU ", gpu.index, " has no MIG profile id ", step.profile_id));
  MigJournal j{gpu.uuid,          step.profile_id,
               step.profile_name, step.placement.start,
               container,         static_cast<std::int64_t>(std::time(nullptr))};
  if (step.gi) {
    j.gi = step.gi;
    for (const MigInstance& m : gpu.mig_instances)
      if (m.gi_id == *step.gi) j.cis_before.push_back(m.ci_id);
  }
  if (auto r = write_mig_journal(cfg, j); !r) return std::unexpected(r.error());
  const nvml::ComputeInstanceSpec ci{step.ci_slices, step.ci_profile_id, step.ci_start};
  auto made = step.gi ? nvml::add_compute_instance(d.lib(), device, *step.gi, ci)
                      : nvml::create_mig_instance(d.lib(), device, *profile, step.placement.start, ci,
                                                  [](std::uint32_t) { fault::point(kFaultAfterGpuInstance); });
  if (!made) {  // what is left is checked now; if that fails too, the journal stays for the next run
    auto left = recover_mig_journal(d, device, cfg, gpu);
    if (!left) log::warn("after a failed creation: " + left.error().message);
    return made;
  }
  fault::point(kFaultAfterComputeInstance);
  log::info(text::cat("created MIG ", step.device_profile, " on GPU ", gpu.index, ": gi ", made->gi, " ci ", made->ci,
                      step.gi ? "" : " (new " + placement_text(step.profile_name, step.placement) + ")", " for ",
                      container));
  return made;
}

Result<> finish_journaled(const Config& cfg, const Inventory& inv, const std::string& gpu_uuid,
                          const nvml::CreatedInstance& made) {
  const Gpu* g = inv.gpu_by_uuid(gpu_uuid);
  for (const MigInstance& m : g ? g->mig_instances : std::vector<MigInstance>{})
    if (m.gi_id == made.gi && m.ci_id == made.ci)
      if (auto r = add_mig_made(cfg, gpu_uuid, {m.uuid}); !r) return r;
  return remove_mig_journal(cfg, gpu_uuid);
}

Result<Inventory> rediscover_mig(const Config& cfg) {
  auto inv = discover(cfg);
  if (!inv) return std::unexpected(inv.error().wrap("reading MIG instances back"));
  if (auto r = write_inventory_cache(cfg, *inv); !r) return std::unexpected(r.error());
  return inv;
}

Result<Inventory> refresh_after_mig_change(const Config& cfg, const InventoryListener& on_changed,
                                           std::vector<std::string>& warnings) {
  auto inv = rediscover_mig(cfg);
  if (!inv || !on_changed) return inv;
  if (auto told = on_changed(*inv); !told) {
    warnings.push_back(told.error().message);
    log::warn(warnings.back());
  }
  return inv;
}

void ensure_cap_nodes(const Config& cfg, const MigInstance& m, std::vector<std::string>& warnings) {
  for (const DeviceNodeInfo& n : m.cap_nodes) {
    const std::string path = cfg.host_path(n.path);
    if (fs::exists(path) || n.major < 0 || n.minor < 0) continue;
    auto made = fs::make_dirs(fs::dirname(path), 0755);
    if (made && ::mknod(path.c_str(), S_IFCHR | 0400, makedev(n.major, n.minor)) != 0)
      made = sys_error("cannot mknod " + path);
    if (made) {
      log::info("made MIG capability node " + path);
      continue;
    }
    warnings.push_back(made.error().message + " (nvidia-modprobe -f makes it)");
    log::warn(warnings.back());
  }
}

}  // namespace gpufrac
