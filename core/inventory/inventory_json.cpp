// JSON form of the Inventory: the cache file /run/gpufrac/inventory.json and `gpufrac info --json`.
#include <nlohmann/json.hpp>

#include "core/inventory/inventory.hpp"
#include "core/text.hpp"

namespace gpufrac {

using nlohmann::json;

namespace {

// Version 2 added the driver's user-space files (a version-1 cache is refused: refresh it).
constexpr int kInventoryJsonVersion = 2;

json node_json(const DeviceNodeInfo& n) {
  return {{"path", n.path}, {"major", n.major}, {"minor", n.minor}};
}
DeviceNodeInfo node_from(const json& j) {
  return {j.at("path"), j.at("major"), j.at("minor")};
}

json compute_profile_json(const MigComputeProfile& c) {
  return {{"index", c.index},
          {"id", c.id},
          {"slices", c.slices},
          {"max_count", c.max_count},
          {"multiprocessors", c.multiprocessors},
          {"placements", c.placement_starts},
          {"placement_size", c.placement_size}};
}

MigComputeProfile compute_profile_from(const json& j) {
  MigComputeProfile c;
  c.index = j.at("index");
  c.id = j.at("id");
  c.slices = j.at("slices");
  c.max_count = j.at("max_count");
  c.multiprocessors = j.at("multiprocessors");
  c.placement_starts = j.at("placements").get<std::vector<std::uint32_t>>();
  c.placement_size = j.at("placement_size");
  return c;
}

json profile_json(const MigProfile& p) {
  json cps = json::array();
  for (const auto& c : p.compute_profiles) cps.push_back(compute_profile_json(c));
  return {{"index", p.index},
          {"id", p.id},
          {"name", p.name},
          {"compute_slices", p.compute_slices},
          {"memory_slices", p.memory_slices},
          {"memory_mib", p.memory_mib},
          {"max_count", p.max_count},
          {"multiprocessors", p.multiprocessors},
          {"copy_engines", p.copy_engines},
          {"decoders", p.decoders},
          {"encoders", p.encoders},
          {"jpegs", p.jpegs},
          {"ofas", p.ofas},
          {"placements", p.placement_starts},
          {"compute_profiles", cps}};
}

MigProfile profile_from(const json& j) {
  MigProfile p;
  p.index = j.at("index");
  p.id = j.at("id");
  p.name = j.at("name");
  p.compute_slices = j.at("compute_slices");
  p.memory_slices = j.at("memory_slices");
  p.memory_mib = j.at("memory_mib");
  p.max_count = j.at("max_count");
  p.multiprocessors = j.at("multiprocessors");
  p.copy_engines = j.at("copy_engines");
  p.decoders = j.at("decoders");
  p.encoders = j.at("encoders");
  p.jpegs = j.at("jpegs");
  p.ofas = j.at("ofas");
  p.placement_starts = j.at("placements").get<std::vector<std::uint32_t>>();
  // Caches written before compute instance profiles were read have none: unknown.
  for (const auto& c : j.value("compute_profiles", json::array()))
    p.compute_profiles.push_back(compute_profile_from(c));
  return p;
}

json instance_json(const MigInstance& m) {
  json caps = json::array();
  for (const auto& n : m.cap_nodes) caps.push_back(node_json(n));
  return {{"gi", m.gi_id},
          {"ci", m.ci_id},
          {"profile_id", m.profile_id},
          {"profile", m.profile_name},
          {"uuid", m.uuid},
          {"memory_bytes", m.memory_bytes},
          {"placement", {{"start", m.placement.start}, {"size", m.placement.size}}},
          {"compute_slices", m.compute_slices},
          {"ci_profile_id", m.ci_profile_id},
          {"ci_start", m.ci_start},
          {"multiprocessors", m.multiprocessors},
          {"cap_nodes", caps}};
}

MigInstance instance_from(const json& j) {
  MigInstance m;
  m.gi_id = j.at("gi");
  m.ci_id = j.at("ci");
  m.profile_id = j.at("profile_id");
  m.profile_name = j.at("profile");
  m.uuid = j.at("uuid");
  m.memory_bytes = j.at("memory_bytes");
  m.placement = {j.at("placement").at("start"), j.at("placement").at("size")};
  m.compute_slices = j.at("compute_slices");
  // Older caches: the full-size compute instance, SMs unknown.
  m.ci_profile_id = j.value("ci_profile_id", 0u);
  m.ci_start = j.value("ci_start", 0u);
  m.multiprocessors = j.value("multiprocessors", 0u);
  for (const auto& n : j.at("cap_nodes")) m.cap_nodes.push_back(node_from(n));
  return m;
}

// Topology: the NUMA node (null: unknown) and the links to the other GPUs ("nvlinks", "pcie" as
// nvidia-smi topo -m names the path). Caches written before topology have neither: unknown.
json links_json(const Gpu& g) {
  json links = json::array();
  for (const auto& l : g.links)
    links.push_back({{"uuid", l.uuid}, {"nvlinks", l.nvlinks}, {"pcie", to_string(l.pcie)}});
  return links;
}

void topology_from(const json& j, Gpu& g) {
  if (j.contains("numa_node") && !j.at("numa_node").is_null()) g.numa_node = j.at("numa_node").get<std::uint32_t>();
  if (!j.contains("links")) return;
  for (const auto& l : j.at("links")) {
    auto pcie = pcie_link_from(l.at("pcie").get<std::string>());
    if (!pcie) throw std::runtime_error("unknown PCIe link " + l.at("pcie").dump());
    g.links.push_back({l.at("uuid"), l.at("nvlinks"), *pcie});
  }
}

json gpu_json(const Gpu& g) {
  json profiles = json::array(), instances = json::array();
  for (const auto& p : g.mig_profiles) profiles.push_back(profile_json(p));
  for (const auto& m : g.mig_instances) instances.push_back(instance_json(m));
  return {{"index", g.index},
          {"uuid", g.uuid},
          {"name", g.name},
          {"pci_bus_id", g.pci_bus_id},
          {"minor", g.minor},
          {"memory_bytes", g.memory_bytes},
          {"compute_capability", text::cat(g.cc_major, ".", g.cc_minor)},
          {"mig",
           {{"capable", g.mig_capable},
            {"enabled", g.mig_enabled},
            {"pending", g.mig_pending},
            {"profiles", profiles},
            {"instances", instances}}},
          {"memory_limits", g.memory_limits},
          {"numa_node", g.numa_node ? json(*g.numa_node) : json(nullptr)},
          {"links", links_json(g)},
          {"node", node_json(g.node)}};
}

Gpu gpu_from(const json& j) {
  Gpu g;
  g.index = j.at("index");
  g.uuid = j.at("uuid");
  g.name = j.at("name");
  g.pci_bus_id = j.at("pci_bus_id");
  g.minor = j.at("minor");
  g.memory_bytes = j.at("memory_bytes");
  const std::string cc = j.at("compute_capability");
  auto dot = cc.find('.');
  g.cc_major = std::stoi(cc.substr(0, dot));
  g.cc_minor = std::stoi(cc.substr(dot + 1));
  const json& mig = j.at("mig");
  g.mig_enabled = mig.at("enabled");
  g.mig_pending = mig.at("pending");
  for (const auto& p : mig.at("profiles")) g.mig_profiles.push_back(profile_from(p));
  for (const auto& m : mig.at("instances")) g.mig_instances.push_back(instance_from(m));
  // Caches written before "capable" existed listed profiles for every MIG-capable GPU.
  g.mig_capable = mig.value("capable", g.mig_enabled || g.mig_pending || !g.mig_profiles.empty());
  g.memory_limits = j.value("memory_limits", false);  // caches written before r615 support: none
  g.node = node_from(j.at("node"));
  topology_from(j, g);
  return g;
}

json driver_json(const DriverFiles& d) {
  json files = json::array();
  for (const auto& f : d.files)
    files.push_back({{"kind", to_string(f.kind)}, {"host_path", f.host_path}, {"container_path", f.container_path}});
  return {{"version", d.version}, {"root", d.root}, {"files", files}, {"library_dirs", d.library_dirs}};
}

DriverFileKind driver_kind_from(const std::string& s) {
  for (auto k : {DriverFileKind::library, DriverFileKind::link, DriverFileKind::binary, DriverFileKind::firmware,
                 DriverFileKind::socket})
    if (s == to_string(k)) return k;
  throw std::runtime_error("unknown driver file kind \"" + s + "\"");
}

DriverFiles driver_from(const json& j) {
  DriverFiles d;
  d.version = j.at("version");
  d.root = j.at("root");
  for (const auto& f : j.at("files"))
    d.files.push_back({driver_kind_from(f.at("kind")), f.at("host_path"), f.at("container_path")});
  d.library_dirs = j.at("library_dirs").get<std::vector<std::string>>();
  return d;
}

json origin_json(const InventoryOrigin& o) {
  return {{"machine", o.machine}, {"machine_hash", o.machine_hash}, {"driver", o.driver}, {"gpus", o.gpus}};
}

InventoryOrigin origin_from(const json& j) {
  return {j.at("machine"), j.at("machine_hash"), j.at("driver"), j.at("gpus").get<std::vector<std::string>>()};
}

}  // namespace

json to_json(const Inventory& inv) {
  json gpus = json::array(), control = json::array();
  for (const auto& g : inv.gpus) gpus.push_back(gpu_json(g));
  for (const auto& n : inv.control_nodes) control.push_back(node_json(n));
  json out{{"version", kInventoryJsonVersion},
           {"driver_version", inv.driver_version},
           {"source", inv.source},
           {"gpus", gpus},
           {"control_nodes", control},
           {"driver", driver_json(inv.driver)}};
  if (inv.origin) out["origin"] = origin_json(*inv.origin);
  return out;
}

Result<Inventory> inventory_from_json(const json& j) {
  try {
    if (j.at("version") != kInventoryJsonVersion)
      return internal_error(text::cat("inventory cache has version ", j.at("version").dump(), ", expected ",
                                      kInventoryJsonVersion, "; run gpufrac info --refresh"));
    Inventory inv;
    inv.driver_version = j.at("driver_version");
    inv.source = j.at("source");
    for (const auto& g : j.at("gpus")) inv.gpus.push_back(gpu_from(g));
    for (const auto& n : j.at("control_nodes")) inv.control_nodes.push_back(node_from(n));
    inv.driver = driver_from(j.at("driver"));
    if (j.contains("origin")) inv.origin = origin_from(j.at("origin"));
    return inv;
  } catch (const std::exception& e) {
    return internal_error(std::string("inventory cache is malformed: ") + e.what() + "; run gpufrac info --refresh");
  }
}

}  // namespace gpufrac
