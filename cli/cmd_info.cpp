// `gpufrac info [--json] [--machine FILE] [--refresh] [--topology]`: GPUs, MIG instances, profiles,
// device nodes; with --topology the GPUs' links as nvidia-smi topo -m shows them.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/table.hpp"
#include "cli/topology_render.hpp"
#include "core/enforcement/enforcement.hpp"
#include "core/mig/mig_device.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"

namespace gpufrac::cli {

namespace {

std::string node_text(const DeviceNodeInfo& n) {
  return n.major < 0 ? n.path + " (driver not loaded)" : text::cat(n.path, " ", n.major, ":", n.minor);
}

std::string mig_text(const Gpu& g) {
  if (!g.mig_capable) return "unsupported";
  std::string s = g.mig_enabled ? "enabled" : "disabled";
  if (g.mig_pending != g.mig_enabled) s += g.mig_pending ? " (enable pending)" : " (disable pending)";
  return s;
}

std::string render_gpus(const Inventory& inv) {
  Table t({"GPU", "NAME", "UUID", "BUS ID", "MEMORY", "CC", "MIG", "NODE"});
  for (const auto& g : inv.gpus)
    t.add({text::cat(g.index), g.name, g.uuid, g.pci_bus_id, text::format_bytes(g.memory_bytes),
           text::cat(g.cc_major, ".", g.cc_minor), mig_text(g), node_text(g.node)});
  return t.render();
}

// Every MIG device (compute instance): its profile, SMs, where it sits (memory slices of its GPU
// instance, compute slices inside it) and its GPU instance's memory, shared when it is split.
std::string render_instances(const Inventory& inv) {
  Table t({"GPU", "GI", "CI", "PROFILE", "SMS", "PLACEMENT", "COMPUTE", "MEMORY", "UUID", "CAP NODES"});
  for (const auto& g : inv.gpus)
    for (const auto& m : g.mig_instances) {
      std::vector<std::string> caps;
      for (const auto& n : m.cap_nodes) caps.push_back(node_text(n));
      const std::string name = mig_device_profile(g, m);
      t.add({text::cat(g.index), text::cat(m.gi_id), text::cat(m.ci_id), name,
             m.multiprocessors ? text::cat(m.multiprocessors) : "-",
             text::cat(m.placement.start, ":", m.placement.size), text::cat(m.ci_start, ":", m.compute_slices),
             text::format_bytes(m.memory_bytes) + (name == m.profile_name ? "" : " (shared)"), m.uuid,
             caps.empty() ? "missing (not in /proc/driver/nvidia-caps/mig-minors)" : text::join(caps, ", ")});
    }
  return t.empty() ? "" : "\nMIG instances\n" + t.render();
}

// "1c 14 SMs x3 {0,1,2}, 2c 28 SMs {0}, 3g 42 SMs {0}": what NVML answered for a GI profile.
std::string compute_profiles_text(const MigProfile& p) {
  if (p.compute_profiles.empty()) return "-";
  std::vector<std::string> out;
  for (const auto& c : p.compute_profiles) {
    std::vector<std::string> starts;
    for (auto s : c.placement_starts) starts.push_back(text::cat(s));
    out.push_back(text::cat(c.slices == p.compute_slices ? text::cat(c.slices, "g") : text::cat(c.slices, "c"), " ",
                            c.multiprocessors, " SMs", c.max_count > 1 ? text::cat(" x", c.max_count) : "", " {",
                            text::join(starts, ","), "}"));
  }
  return text::join(out, ", ");
}

std::string render_profiles(const Inventory& inv) {
  std::string out;
  for (const auto& g : inv.gpus) {
    if (g.mig_profiles.empty()) continue;
    Table t({"PROFILE", "ID", "SLICES", "SMS", "MEMORY", "MAX", "PLACEMENTS", "COMPUTE INSTANCES"}, "  ");
    for (const auto& p : g.mig_profiles) {
      std::vector<std::string> starts;
      for (auto s : p.placement_starts) starts.push_back(text::cat(s));
      t.add({p.name, text::cat(p.id), text::cat(p.compute_slices, "c/", p.memory_slices, "m"),
             text::cat(p.multiprocessors), text::format_bytes(p.memory_mib * kMiB), text::cat(p.max_count),
             "{" + text::join(starts, ",") + "}:" + text::cat(p.memory_slices), compute_profiles_text(p)});
    }
    out += text::cat("\nMIG profiles of GPU ", g.index, " (", g.name, ")\n") + t.render();
  }
  return out;
}

// How a share without gpufrac.io/compute shares the GPU's time on this node (allocation.compute).
std::string compute_text(const AllocationConfig& allocation) {
  if (allocation.compute == ComputeManagement::unmanaged)
    return "Compute shares: unmanaged (allocation.compute): only shares with gpufrac.io/compute book the GPU's "
           "time\n";
  return "Compute shares: managed (allocation.compute): a share without gpufrac.io/compute books its memory share "
         "of the GPU's time\n";
}

// Who holds each GPU's shares' memory limits, and why (docs/architecture.md "Driver-enforced
// memory limits").
std::string render_enforcement(const Inventory& inv, const Config& cfg, CgroupLayout layout) {
  Table t({"GPU", "BY", "WHY"});
  for (const auto& g : inv.gpus) {
    const GpuEnforcement e = gpu_enforcement(g, inv, layout, cfg);
    t.add({text::cat(g.index), to_string(e.holder), e.why});
  }
  return text::cat("\nMemory limits (enforcement: ", to_string(cfg.enforcement), ", ", to_string(layout), ")\n") +
         t.render();
}

nlohmann::json info_json(const Inventory& inv, const Config& cfg, CgroupLayout layout) {
  nlohmann::json j = to_json(inv);
  for (std::size_t i = 0; i < inv.gpus.size(); ++i) {
    const GpuEnforcement e = gpu_enforcement(inv.gpus[i], inv, layout, cfg);
    j["gpus"][i]["enforcement"] = {{"by", to_string(e.holder)}, {"why", e.why}};
  }
  return j;
}

std::string render(const Inventory& inv, const Config& cfg, CgroupLayout layout) {
  std::string out = text::cat("Driver ", inv.driver_version, "  (", inv.source, ")\n\n");
  out += render_gpus(inv) + render_enforcement(inv, cfg, layout) + render_instances(inv) + render_profiles(inv);
  std::vector<std::string> control;
  for (const auto& n : inv.control_nodes) control.push_back(node_text(n));
  return out + "\nControl nodes: " + text::join(control, ", ") + "\n" + compute_text(cfg.allocation);
}

struct InfoOptions {
  std::string machine;
  bool json = false, refresh = false, topology = false;
};

std::string output(const Inventory& inv, const Config& cfg, const InfoOptions& o) {
  if (o.topology) return o.json ? topology_json(inv).dump(2) + "\n" : render_topology(inv);
  const CgroupLayout layout = detect_cgroup_layout(cfg.cgroup_root);
  return o.json ? info_json(inv, cfg, layout).dump(2) + "\n" : render(inv, cfg, layout);
}

int run_info(Context& ctx, const InfoOptions& o) {
  auto cfg = ctx.load(o.machine);
  if (!cfg) return ctx.fail(cfg.error());
  auto inv = discover(*cfg);
  if (!inv) return ctx.fail(inv.error());
  if (o.refresh)
    if (auto r = write_inventory_cache(*cfg, *inv); !r) return ctx.fail(r.error());
  const std::string out = output(*inv, *cfg, o);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (o.refresh) std::fprintf(stderr, "gpufrac: inventory cache written to %s\n", cfg->inventory_cache_path().c_str());
  return 0;
}

}  // namespace

void add_info_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("info", "Show GPUs, MIG instances and profiles, and the device nodes they need");
  auto o = std::make_shared<InfoOptions>();
  cmd->add_option("--machine", o->machine, "Simulated machine file instead of the real driver");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag("--refresh", o->refresh, "Also write the inventory cache (<state-dir>/inventory.json)");
  cmd->add_flag("--topology", o->topology,
                "Show how the GPUs are linked (NVLink, PCIe, NUMA) as nvidia-smi topo -m does");
  cmd->callback([&ctx, o] { ctx.exit_code = run_info(ctx, *o); });
}

}  // namespace gpufrac::cli
