#include "nvml/inventory_origin.hpp"

#include <dirent.h>

#include <algorithm>
#include <iterator>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "nvml/driver_discovery.hpp"
#include "nvml/inventory_cache.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {

namespace {

constexpr std::size_t kMaxProcBytes = 64u << 10;

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t\r") - b + 1));
}

// The UUIDs of the GPUs the driver lists under <host-root>/proc/driver/nvidia/gpus, sorted; none
// when the directory is missing (no driver loaded, or a simulated root without it).
Result<std::vector<std::string>> procfs_gpus(const Config& cfg) {
  const std::string dir = cfg.host_path("/proc/driver/nvidia/gpus");
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr && errno == ENOENT) return out;
  if (d == nullptr) return sys_error("cannot read " + dir);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  ::closedir(d);
  for (const auto& n : names) {
    auto text = fs::read_file(dir + "/" + n + "/information", kMaxProcBytes);
    if (!text) return std::unexpected(text.error());
    const std::string uuid = uuid_of_gpu_information(*text);
    out.push_back(uuid.empty() ? n : uuid);  // no UUID line: the bus id stands in
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<InventoryOrigin> real_origin(const Config& cfg) {
  InventoryOrigin o;
  const std::string version = cfg.host_path("/proc/driver/nvidia/version");
  if (fs::exists(version)) {
    auto text = fs::read_file(version, kMaxProcBytes);
    if (!text) return std::unexpected(text.error());
    o.driver = parse_kernel_module_version(*text).value_or(trim(text->substr(0, text->find('\n'))));
  }
  auto gpus = procfs_gpus(cfg);
  if (!gpus) return std::unexpected(gpus.error());
  o.gpus = std::move(*gpus);
  return o;
}

std::string listed(const std::vector<std::string>& v) {
  return v.empty() ? "none" : text::join(v, ", ");
}

// GPUs that left and GPUs that came: "GPU-a gone, GPU-b new".
std::string gpu_change(const std::vector<std::string>& was, const std::vector<std::string>& now) {
  std::vector<std::string> gone, added;
  std::set_difference(was.begin(), was.end(), now.begin(), now.end(), std::back_inserter(gone));
  std::set_difference(now.begin(), now.end(), was.begin(), was.end(), std::back_inserter(added));
  std::vector<std::string> parts;
  if (!gone.empty()) parts.push_back("GPUs gone: " + listed(gone));
  if (!added.empty()) parts.push_back("GPUs new: " + listed(added));
  return text::join(parts, "; ");
}

}  // namespace

std::string uuid_of_gpu_information(std::string_view text) {
  for (const auto& line : text::split(text, '\n')) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || trim(std::string_view(line).substr(0, colon)) != "GPU UUID") continue;
    return trim(std::string_view(line).substr(colon + 1));
  }
  return "";
}

Result<InventoryOrigin> current_origin(const Config& cfg) {
  if (!uses_simulated_machine(cfg)) return real_origin(cfg);
  InventoryOrigin o;
  o.machine = cfg.nvml.machine;
  auto text = read_machine_file(cfg.nvml.machine);
  if (!text) return std::unexpected(text.error());
  o.machine_hash = text::fnv1a64_hex(*text);
  return o;
}

std::string origin_change(const std::optional<InventoryOrigin>& cached, const InventoryOrigin& now) {
  if (!cached) return "";  // written before origins: nothing to compare (the next write records one)
  if (*cached == now) return "";
  const InventoryOrigin& was = *cached;
  if (was.machine != now.machine) {
    if (was.machine.empty()) return "the node is now the simulated machine " + now.machine + ", was real GPUs";
    if (now.machine.empty()) return "the node now has real GPUs, was the simulated machine " + was.machine;
    return "the machine file is now " + now.machine + ", was " + was.machine;
  }
  if (was.machine_hash != now.machine_hash) return "the machine file " + now.machine + " changed";
  std::vector<std::string> parts;
  if (was.driver != now.driver)
    parts.push_back(text::cat("driver ", was.driver.empty() ? "none" : was.driver, " -> ",
                              now.driver.empty() ? "none" : now.driver));
  if (was.gpus != now.gpus) parts.push_back(gpu_change(was.gpus, now.gpus));
  return text::join(parts, "; ");
}

}  // namespace gpufrac
