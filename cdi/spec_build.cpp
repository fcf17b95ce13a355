#include <algorithm>
#include <map>

#include "cdi/device_names.hpp"
#include "cdi/schema_table.hpp"
#include "cdi/spec.hpp"
#include "cdi/version.hpp"
#include "core/allocator/allocator.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_mps.hpp"
#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

template <class T>
std::vector<T> sorted_unique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

void add_share_names(const Gpu& g, const CdiConfig& c, std::vector<std::string>& names,
                     std::vector<std::string>& warnings) {
  for (Ppm f : sorted_unique(c.fractions))
    if (f < kWholeGpuPpm) names.push_back(fraction_share_name(g, f));
  for (std::uint64_t bytes : sorted_unique(c.memory_shares)) {
    auto name = memory_share_name(g, bytes);
    if (name)
      names.push_back(*name);
    else
      warnings.push_back(text::cat("cdi.memory-shares: ", bytes,
                                   " bytes has no canonical name (not a whole number of kB); no device for it"));
  }
  for (std::uint32_t percent : sorted_unique(c.sm_shares)) names.push_back(sm_share_name(g, percent));
}

// Every single device the node could offer, in spec order ("all" comes last, separately).
std::vector<std::string> candidate_names(const Inventory& inv, const Config& cfg, std::vector<std::string>& warnings) {
  std::vector<std::string> names;
  for (const auto& g : inv.gpus) {
    if (!g.mig_enabled) {
      names.push_back(whole_gpu_name(g));
      names.push_back(g.uuid);
      add_share_names(g, cfg.cdi, names, warnings);
    }
    for (std::size_t i = 0; i < g.mig_instances.size(); ++i) {
      names.push_back(mig_name(g, i));
      names.push_back(g.mig_instances[i].uuid);
    }
  }
  return names;
}

// What the hook would be granted for the device on an idle node: the same mapping and allocator.
Result<Grant> grant_for(const std::string& name, const Inventory& inv, const Config& cfg) {
  auto request = request_for_cdi_device(name, inv);
  if (!request) return std::unexpected(request.error());
  return allocate(*request, inv, {}, cfg.allocation);
}

EditHook hook(const Config& cfg, const std::string& stage, const std::vector<std::string>& extra = {}) {
  return plan_hook(cfg, stage, stage, extra);
}

bool is_control_node(const std::string& path, const Inventory& inv) {
  return std::any_of(inv.control_nodes.begin(), inv.control_nodes.end(),
                     [&](const DeviceNodeInfo& n) { return n.path == path; });
}

// The spec brings the driver's files unless driver.inject is never or the node has none (then
// NVIDIA's toolkit does, told by each device which GPUs it may add).
bool spec_injects_driver(const Inventory& inv, const Config& cfg) {
  return cfg.driver.inject != DriverInject::never && !inv.driver.empty();
}

Result<Edits> device_edits(const std::vector<Grant>& grants, const std::vector<std::string>& members,
                           const Inventory& inv, const Config& cfg) {
  auto nodes = plan_device_nodes(grants, inv, cfg);
  if (!nodes) return std::unexpected(nodes.error());
  Edits e;
  e.env = plan_env(grants);
  if (!spec_injects_driver(inv, cfg)) e.env.push_back(plan_nvidia_visible_devices(grants, false));
  auto mps_env = plan_mps_env(grants);  // an SM share: its pipe directory, percent and pinned limit
  e.env.insert(e.env.end(), mps_env.begin(), mps_env.end());
  for (auto& n : *nodes)
    if (!is_control_node(n.path, inv)) e.device_nodes.push_back(std::move(n));
  for (const auto& m : members) e.hooks.push_back(hook(cfg, "createRuntime", {"--cdi-device", m}));
  e.hooks.push_back(hook(cfg, "poststop"));
  return e;
}

Result<Edits> common_edits(const Inventory& inv, const Config& cfg) {
  auto nodes = plan_device_nodes({}, inv, cfg);
  if (!nodes) return std::unexpected(nodes.error());
  Edits e;
  e.device_nodes = std::move(*nodes);
  // The preload file only: gpufrac's directory (the tmpfs with the shim, limits and usage) is
  // mounted by each device's createRuntime hook (core/plan/plan.hpp plan_gpufrac_dir).
  ContainerFiles files{cfg.state_dir + "/cdi", "", "", cdi_preload_path(cfg)};
  e.mounts.push_back(plan_state_mounts(files).back());
  if (!spec_injects_driver(inv, cfg)) return e;
  auto driver = plan_driver_mounts(inv.driver);
  e.mounts.insert(e.mounts.end(), driver.begin(), driver.end());
  e.env.push_back(plan_nvidia_visible_devices({}, true));
  e.hooks.push_back(hook(cfg, "createRuntime", {"--ld-cache", ld_cache_arg(inv.driver)}));
  return e;
}

Result<> add_all_device(Spec& spec, const std::map<std::string, Grant>& granted, const Inventory& inv,
                        const Config& cfg) {
  auto members = cdi_device_members(kAllDevice, inv);
  if (!members) return {};  // nothing to give
  std::vector<std::string> kept;
  std::vector<Grant> grants;
  for (const auto& m : *members)
    if (auto it = granted.find(m); it != granted.end()) {
      kept.push_back(m);
      grants.push_back(it->second);
    }
  if (kept.empty()) return {};
  auto edits = device_edits(grants, kept, inv, cfg);
  if (!edits) return std::unexpected(edits.error());
  spec.devices.push_back(Device{std::string(kAllDevice), std::move(*edits)});
  return {};
}

}  // namespace

Result<Built> build_spec(const Inventory& inv, const Config& cfg, std::string_view kind) {
  Built out;
  out.spec.kind = std::string(kind);
  auto common = common_edits(inv, cfg);
  if (!common) return std::unexpected(common.error());
  out.spec.common = std::move(*common);
  std::map<std::string, Grant> granted;
  for (const auto& name : candidate_names(inv, cfg, out.warnings)) {
    auto grant = grant_for(name, inv, cfg);
    if (!grant) {
      out.warnings.push_back(text::cat("no device ", kind, "=", name, ": ", grant.error().message));
      continue;
    }
    auto edits = device_edits({*grant}, {name}, inv, cfg);
    if (!edits) return std::unexpected(edits.error());
    out.spec.devices.push_back(Device{name, std::move(*edits)});
    granted.emplace(name, std::move(*grant));
  }
  if (auto r = add_all_device(out.spec, granted, inv, cfg); !r) return std::unexpected(r.error());
  return out;
}

std::string cdi_preload_path(const Config& cfg) {
  return cfg.state_dir + "/cdi/ld.so.preload";
}

std::string cdi_preload_content() {
  return render_preload("");
}

nlohmann::ordered_json spec_json(const Spec& spec) {
  nlohmann::json j = nlohmann::json::object();
  j["cdiVersion"] = std::string(kEarliestVersion);
  j["kind"] = spec.kind;
  if (!spec.common.empty()) j["containerEdits"] = to_cdi_json(spec.common);
  j["devices"] = nlohmann::json::array();
  for (const auto& d : spec.devices)
    j["devices"].push_back({{"name", d.name}, {"containerEdits", to_cdi_json(d.edits)}});
  nlohmann::ordered_json out = canonical_order(j, ObjectKind::spec);
  out["cdiVersion"] = required_version(out).version;
  return out;
}

}  // namespace gpufrac::cdi
