#include "nvml/simulated.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "core/config/yaml_util.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "nvml/inventory_order.hpp"
#include "nvml/simulated_detail.hpp"

namespace gpufrac {

namespace {

// The installed machines (nvml/CMakeLists.txt sets it to <datadir>/gpufrac/machines).
#ifndef GPUFRAC_MACHINE_DIR
#define GPUFRAC_MACHINE_DIR "/usr/share/gpufrac/machines"
#endif

std::vector<std::string> machine_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml" && e.is_regular_file(ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// "the shipped machines are a100-40gb-x1.yaml, ... (in DIR)", for the named file's directory and the
// installed one.
std::string shipped_machines_hint(const std::string& missing) {
  std::vector<std::string> parts;
  std::vector<std::string> dirs{fs::dirname(missing)};
  if (dirs[0] != GPUFRAC_MACHINE_DIR) dirs.emplace_back(GPUFRAC_MACHINE_DIR);
  for (const auto& dir : dirs)
    if (auto names = machine_files(dir); !names.empty())
      parts.push_back(text::cat(text::join(names, ", "), " in ", dir));
  if (parts.empty())
    return text::cat("no machine files in ", text::join(dirs, " or "), " (the source tree has them in nvml/machines)");
  return "the shipped machines: " + text::join(parts, "; ");
}

}  // namespace

using yaml::Located;

namespace sim {

bool valid_uuid(const std::string& s, std::string_view prefix) {
  if (!s.starts_with(prefix) || s.size() != prefix.size() + 36) return false;
  for (std::size_t i = 0; i < 36; ++i) {
    char c = s[prefix.size() + i];
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Result<std::uint32_t> u32(const Located& n, std::uint64_t max) {
  auto v = yaml::as_u64(n);
  if (!v) return std::unexpected(v.error());
  if (*v > max) return n.fail(text::cat("must be at most ", max));
  return static_cast<std::uint32_t>(*v);
}

}  // namespace sim

namespace {

Result<SimulatedMajors> parse_majors(const Located& n) {
  SimulatedMajors m;
  if (!n.node) return m;
  if (auto r = yaml::check_keys(n, {"nvidia", "nvidia-uvm", "nvidia-caps"}); !r) return std::unexpected(r.error());
  struct F {
    const char* key;
    std::int64_t* target;
  };
  for (F f : {F{"nvidia", &m.nvidia}, F{"nvidia-uvm", &m.nvidia_uvm}, F{"nvidia-caps", &m.nvidia_caps}}) {
    if (!n.node[f.key]) continue;
    auto v = sim::u32(n.child(f.key), 4095);
    if (!v) return std::unexpected(v.error());
    if (*v == 0) return n.child(f.key).fail("must be a character-device major between 1 and 4095");
    *f.target = *v;
  }
  return m;
}

Result<> check_unique_gpus(const Located& gpus_node, const std::vector<Gpu>& gpus) {
  std::set<std::string> uuids;
  std::set<std::uint32_t> minors;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!uuids.insert(gpus[i].uuid).second) return gpus_node.item(i).child("uuid").fail("duplicate GPU uuid");
    if (!minors.insert(gpus[i].minor).second) return gpus_node.item(i).child("minor").fail("duplicate minor number");
  }
  return {};
}

// Turns the file's view into NVML's: profiles are listed only while MIG mode is enabled
// (nvmlDeviceGetGpuInstanceProfileInfo answers NOT_SUPPORTED otherwise), in the canonical order;
// compute instance profiles only for GI profiles with a GPU instance (NVML answers them for a GPU
// instance). The fake driver keeps the whole tables.
void as_nvml_reports(SimulatedMachine& m) {
  for (auto& g : m.inventory.gpus) {
    canonical_order(g);
    m.mig_profile_tables.push_back(g.mig_profiles);
    if (!g.mig_enabled) g.mig_profiles.clear();
    for (auto& p : g.mig_profiles)
      if (std::none_of(g.mig_instances.begin(), g.mig_instances.end(),
                       [&](const MigInstance& i) { return i.profile_id == p.id; }))
        p.compute_profiles.clear();
  }
}

}  // namespace

Result<SimulatedMachine> load_simulated_machine_string(const std::string& content, const std::string& name) {
  auto root = yaml::load_string(content, name);
  if (!root) return std::unexpected(root.error());
  if (auto r = yaml::check_keys(*root,
                                {"description", "driver-version", "device-majors", "profile-sets", "gpus", "topology"});
      !r)
    return std::unexpected(r.error());
  SimulatedMachine m;
  m.file = name;
  m.inventory.source = "simulated:" + name;
  if (!root->node["driver-version"]) return root->fail("driver-version: missing (e.g. \"550.54.15\")");
  auto drv = yaml::as_string(root->child("driver-version"));
  if (!drv) return std::unexpected(drv.error());
  m.inventory.driver_version = *drv;
  auto majors = parse_majors(root->child("device-majors"));
  if (!majors) return std::unexpected(majors.error());
  m.majors = *majors;
  auto sets = sim::parse_profile_sets(root->child("profile-sets"));
  if (!sets) return std::unexpected(sets.error());
  Located gpus = root->child("gpus");
  if (!gpus.node || !gpus.node.IsSequence() || gpus.node.size() == 0)
    return gpus.fail("must be a non-empty list of GPUs");
  for (std::size_t i = 0; i < gpus.node.size(); ++i) {
    auto g = sim::parse_gpu(gpus.item(i), static_cast<std::uint32_t>(i), *sets);
    if (!g) return std::unexpected(g.error());
    m.inventory.gpus.push_back(std::move(*g));
  }
  if (auto r = check_unique_gpus(gpus, m.inventory.gpus); !r) return std::unexpected(r.error());
  if (auto r = sim::parse_topology(root->child("topology"), m.inventory.gpus); !r) return std::unexpected(r.error());
  // What the fake libnvidia-ml.so.1 answers for this driver (its memory-limit calls from r615 on).
  for (auto& g : m.inventory.gpus)
    g.memory_limits = driver_major(m.inventory.driver_version) >= kMemoryLimitsDriverMajor;
  as_nvml_reports(m);
  return m;
}

Result<std::string> read_machine_file(const std::string& path) {
  auto content = fs::read_file(path, 4u << 20);
  if (content) return content;
  Error e = content.error();
  e.kind = ErrorKind::user;
  e.wrap("machine file");
  if (e.err == ENOENT) e.message += "; " + shipped_machines_hint(path);
  return std::unexpected(std::move(e));
}

Result<SimulatedMachine> load_simulated_machine(const std::string& path) {
  auto content = read_machine_file(path);
  if (!content) return std::unexpected(content.error());
  return load_simulated_machine_string(*content, path);
}

}  // namespace gpufrac
