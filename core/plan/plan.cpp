#include "core/plan/plan.hpp"

#include <algorithm>
#include <sstream>

#include "core/fs.hpp"
#include "core/plan/plan_mps.hpp"
#include "core/text.hpp"
#include "gpufrac/arbiter_abi.h"
#include "gpufrac/limits_abi.h"

namespace gpufrac {

namespace {

Result<EditDeviceNode> node_edit(const DeviceNodeInfo& n, const Config& cfg) {
  if (n.major < 0 || n.minor < 0)
    return internal_error(text::cat("the NVIDIA driver lists no device major for ", n.path, " in ",
                                    cfg.host_path("/proc/devices"), "; is the driver loaded?"));
  return EditDeviceNode{n.path, cfg.host_path(n.path), 'c', n.major, n.minor, 0666u, "rw"};
}

Result<std::vector<DeviceNodeInfo>> grant_nodes(const Grant& g, const Inventory& inv) {
  const Gpu* gpu = inv.gpu_by_uuid(g.gpu_uuid);
  if (!gpu) return internal_error("granted GPU " + g.gpu_uuid + " is not in the inventory; run gpufrac info --refresh");
  std::vector<DeviceNodeInfo> nodes = {gpu->node};
  if (!g.mig) return nodes;
  auto mig = inv.mig_by_uuid(g.device_uuid);
  if (!mig) return internal_error("granted MIG instance " + g.device_uuid + " is not in the inventory");
  if (mig->second->cap_nodes.size() != 2)
    return internal_error("MIG instance " + g.device_uuid +
                          " has no capability device nodes in /proc/driver/nvidia-caps/mig-minors");
  nodes.insert(nodes.end(), mig->second->cap_nodes.begin(), mig->second->cap_nodes.end());
  return nodes;
}

}  // namespace

ContainerFiles container_files(const Config& cfg, const std::string& key) {
  const std::string dir = cfg.container_dir(key);
  return {dir, dir + "/limits", dir + "/usage", dir + "/ld.so.preload"};
}

Result<std::vector<EditDeviceNode>> plan_device_nodes(const std::vector<Grant>& grants, const Inventory& inv,
                                                      const Config& cfg) {
  std::vector<DeviceNodeInfo> wanted = inv.control_nodes;
  for (const auto& g : grants) {
    auto nodes = grant_nodes(g, inv);
    if (!nodes) return std::unexpected(nodes.error());
    wanted.insert(wanted.end(), nodes->begin(), nodes->end());
  }
  std::vector<EditDeviceNode> out;
  for (const auto& n : wanted) {
    if (std::any_of(out.begin(), out.end(), [&](const EditDeviceNode& e) { return e.path == n.path; })) continue;
    auto e = node_edit(n, cfg);
    if (!e) return std::unexpected(e.error());
    out.push_back(std::move(*e));
  }
  return out;
}

std::vector<EditMount> plan_shim_mounts(const Config& cfg) {
  return {{"tmpfs", GPUFRAC_CONTAINER_DIR, "tmpfs", {"nosuid", "nodev", "noexec", "size=1m", "mode=755"}},
          {cfg.shim_path, GPUFRAC_CONTAINER_SHIM, "bind", {"ro", "nosuid", "nodev", "bind"}}};
}

std::vector<EditMount> plan_state_mounts(const ContainerFiles& f) {
  return {{f.limits, GPUFRAC_CONTAINER_LIMITS, "bind", {"ro", "nosuid", "nodev", "noexec", "bind"}},
          {f.usage, GPUFRAC_CONTAINER_USAGE, "bind", {"nosuid", "nodev", "noexec", "bind"}},
          {f.preload, "/etc/ld.so.preload", "bind", {"ro", "nosuid", "nodev", "noexec", "bind"}}};
}

std::string compute_arbiter_dir(const Config& cfg, const std::string& device_uuid) {
  return cfg.state_dir + "/compute/" + device_uuid + ".d";
}

std::string compute_arbiter_path(const Config& cfg, const std::string& device_uuid) {
  return compute_arbiter_dir(cfg, device_uuid) + "/" + device_uuid;
}

std::vector<EditMount> plan_compute_mounts(const std::vector<Grant>& grants, const Config& cfg,
                                           const std::string& container_key) {
  std::vector<EditMount> out;
  const std::vector<std::string> ro = {"ro", "nosuid", "nodev", "noexec", "bind"},
                                 rw = {"nosuid", "nodev", "noexec", "bind"};
  for (const auto& g : grants) {
    if (!is_time_share(g.compute_ppm, g.compute_mode)) continue;  // an SM share has no arbiter
    if (g.compute_ppm >= GPUFRAC_ARBITER_WHOLE) continue;         // a whole GPU: not arbitrated
    const std::string host = compute_arbiter_path(cfg, g.device_uuid);
    const std::string inside = std::string(GPUFRAC_CONTAINER_COMPUTE) + "/" + g.device_uuid;
    EditMount lease{host, inside, "bind", rw};
    if (std::find(out.begin(), out.end(), lease) != out.end()) continue;
    const std::string lanes = host + GPUFRAC_ARBITER_LANES_SUFFIX;
    out.push_back(std::move(lease));
    out.push_back({host + GPUFRAC_ARBITER_SLOTS_SUFFIX, inside + GPUFRAC_ARBITER_SLOTS_SUFFIX, "bind", ro});
    out.push_back({lanes, inside + GPUFRAC_ARBITER_LANES_SUFFIX, "bind", ro});
    out.push_back({lanes + "/" + container_key, inside + GPUFRAC_ARBITER_LANE_SUFFIX, "bind", rw});
  }
  return out;
}

std::vector<EditMount> plan_gpufrac_dir(const Config& cfg, const ContainerFiles& files,
                                        const std::vector<Grant>& grants) {
  auto out = plan_shim_mounts(cfg);
  auto state = plan_state_mounts(files);
  out.insert(out.end(), state.begin(), state.begin() + 2);  // limits and usage
  auto compute = plan_compute_mounts(grants, cfg, fs::basename(files.dir));
  out.insert(out.end(), compute.begin(), compute.end());
  auto mps = plan_mps_mounts(grants, cfg);
  out.insert(out.end(), mps.begin(), mps.end());
  return out;
}

std::vector<std::string> plan_env(const std::vector<Grant>& grants) {
  std::vector<std::string> uuids, limits;
  for (const auto& g : grants) {
    uuids.push_back(g.device_uuid);
    limits.push_back(text::cat(g.bytes));
  }
  return {"GPUFRAC_DEVICES=" + text::join(uuids, ","), "GPUFRAC_MEMORY_LIMITS=" + text::join(limits, ",")};
}

std::vector<EditMount> plan_driver_mounts(const DriverFiles& driver) {
  std::vector<EditMount> out;
  for (const auto& f : driver.files) {
    std::vector<std::string> options = {"ro", "nosuid", "nodev", "bind"};
    if (f.kind == DriverFileKind::firmware) options = {"ro", "nosuid", "nodev", "noexec", "bind"};
    if (f.kind == DriverFileKind::socket) options = {"nosuid", "nodev", "noexec", "bind"};
    out.push_back({f.host_path, f.container_path, "bind", std::move(options)});
  }
  return out;
}

std::string plan_nvidia_visible_devices(const std::vector<Grant>& grants, bool with_driver) {
  if (with_driver) return "NVIDIA_VISIBLE_DEVICES=void";
  std::vector<std::string> uuids;
  for (const auto& g : grants)
    if (std::find(uuids.begin(), uuids.end(), g.device_uuid) == uuids.end()) uuids.push_back(g.device_uuid);
  return "NVIDIA_VISIBLE_DEVICES=" + (uuids.empty() ? std::string("void") : text::join(uuids, ","));
}

std::string ld_cache_arg(const DriverFiles& driver) {
  return text::join(driver.library_dirs, ":");
}

EditHook plan_hook(const Config& cfg, const std::string& oci_stage, const std::string& hook_stage,
                   const std::vector<std::string>& extra_args) {
  EditHook h{
      oci_stage, cfg.hook_path, {"gpufrac-hook", hook_stage}, {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, kHookTimeoutS};
  h.args.insert(h.args.end(), extra_args.begin(), extra_args.end());
  if (!cfg.source.empty() && cfg.source.front() == '/') h.env.push_back(std::string(kConfigEnv) + "=" + cfg.source);
  return h;
}

Result<Edits> plan_container_edits(const std::vector<Grant>& grants, const Inventory& inv, const Config& cfg,
                                   const std::string& container_key, bool with_driver) {
  auto nodes = plan_device_nodes(grants, inv, cfg);
  if (!nodes) return std::unexpected(nodes.error());
  Edits e;
  e.env = plan_env(grants);
  e.env.push_back(plan_nvidia_visible_devices(grants, with_driver));
  auto mps_env = plan_mps_env(grants);
  e.env.insert(e.env.end(), mps_env.begin(), mps_env.end());
  e.device_nodes = std::move(*nodes);
  e.mounts = plan_shim_mounts(cfg);
  auto state = plan_state_mounts(container_files(cfg, container_key));
  e.mounts.insert(e.mounts.end(), state.begin(), state.end());
  auto compute = plan_compute_mounts(grants, cfg, container_key);
  e.mounts.insert(e.mounts.end(), compute.begin(), compute.end());
  auto mps = plan_mps_mounts(grants, cfg);
  e.mounts.insert(e.mounts.end(), mps.begin(), mps.end());
  if (!with_driver) return e;
  auto driver = plan_driver_mounts(inv.driver);
  e.mounts.insert(e.mounts.end(), driver.begin(), driver.end());
  return e;
}

Result<Edits> plan_spec_edits(const std::vector<Grant>& grants, const Inventory& inv, const Config& cfg,
                              const std::string& container_key, bool with_driver) {
  auto e = plan_container_edits(grants, inv, cfg, container_key, with_driver);
  if (!e) return e;
  const std::string dir = GPUFRAC_CONTAINER_DIR;
  std::erase_if(e->mounts, [&](const EditMount& m) {
    return m.container_path == dir || m.container_path.starts_with(dir + "/") || is_mps_mount(m, cfg);
  });
  return e;
}

std::string render_preload(const std::string& image_preload) {
  std::vector<std::string> lines = {GPUFRAC_CONTAINER_SHIM};
  std::istringstream in(image_preload);
  for (std::string entry; in >> entry;) {  // ld.so splits on whitespace as well as newlines
    if (entry.starts_with("#")) {
      std::string rest;
      std::getline(in, rest);  // comment to end of line
      continue;
    }
    if (std::find(lines.begin(), lines.end(), entry) == lines.end()) lines.push_back(entry);
  }
  return text::join(lines, "\n") + "\n";
}

}  // namespace gpufrac
