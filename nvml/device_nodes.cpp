#include "nvml/device_nodes.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <sstream>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac {

HostDriverFiles parse_proc_devices(const std::string& content) {
  HostDriverFiles out;
  bool in_char = false;
  std::istringstream in(content);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Character devices:")) {
      in_char = true;
      continue;
    }
    if (line.starts_with("Block devices:")) in_char = false;
    if (!in_char) continue;
    std::istringstream fields(line);
    std::string number, name;
    if (!(fields >> number >> name)) continue;
    auto major = text::parse_i64(number);
    if (!major) continue;
    if (name == "nvidia" || name == "nvidia-frontend") out.nvidia_major = *major;
    if (name == "nvidia-uvm") out.uvm_major = *major;
    if (name == "nvidia-caps") out.caps_major = *major;
  }
  return out;
}

std::map<std::string, std::int64_t> parse_mig_minors(const std::string& content) {
  std::map<std::string, std::int64_t> out;
  std::istringstream in(content);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string cap, number;
    if (!(fields >> cap >> number)) continue;
    if (auto minor = text::parse_i64(number)) out[cap] = *minor;
  }
  return out;
}

Result<HostDriverFiles> read_host_driver_files(const std::string& host_root) {
  HostDriverFiles out;
  const std::string devices = fs::join_root(host_root, "/proc/devices");
  if (fs::exists(devices)) {
    auto text = fs::read_file(devices, 1u << 20);
    if (!text) return std::unexpected(text.error());
    out = parse_proc_devices(*text);
  }
  const std::string minors = fs::join_root(host_root, "/proc/driver/nvidia-caps/mig-minors");
  if (fs::exists(minors)) {
    auto text = fs::read_file(minors, 4u << 20);
    if (!text) return std::unexpected(text.error());
    out.mig_minors = parse_mig_minors(*text);
  }
  return out;
}

Result<> check_host_device_node(const std::string& host_path, const std::string& path) {
  struct stat st {};
  if (::stat(host_path.c_str(), &st) == 0) return {};
  const int err = errno;
  auto e = sys_error("device node " + host_path, err);
  if (err == ENOENT && host_path.size() > path.size() && host_path.ends_with(path))
    e.error().message += "; host-root " + host_path.substr(0, host_path.size() - path.size()) + " has no " + path +
                         " (a simulated node: gpufrac simulate init-root --machine FILE --root ROOT makes it; a GPU "
                         "node: host-root /, where the driver makes it)";
  else if (err == ENOENT)
    e.error().message += "; the NVIDIA driver makes it (nvidia-modprobe, or nvidia-smi once)";
  return e;
}

std::string mig_gi_cap_key(std::uint32_t gpu_minor, std::uint32_t gi) {
  return text::cat("gpu", gpu_minor, "/gi", gi, "/access");
}

std::string mig_ci_cap_key(std::uint32_t gpu_minor, std::uint32_t gi, std::uint32_t ci) {
  return text::cat("gpu", gpu_minor, "/gi", gi, "/ci", ci, "/access");
}

static std::optional<DeviceNodeInfo> cap_node(const HostDriverFiles& f, const std::string& key) {
  auto it = f.mig_minors.find(key);
  if (it == f.mig_minors.end()) return std::nullopt;
  return DeviceNodeInfo{text::cat("/dev/nvidia-caps/nvidia-cap", it->second), f.caps_major.value_or(-1), it->second};
}

void attach_device_nodes(Inventory& inv, const HostDriverFiles& f) {
  const std::int64_t nv = f.nvidia_major.value_or(-1), uvm = f.uvm_major.value_or(-1);
  inv.control_nodes = {{"/dev/nvidiactl", nv, 255}, {"/dev/nvidia-uvm", uvm, 0}, {"/dev/nvidia-uvm-tools", uvm, 1}};
  for (auto& g : inv.gpus) {
    g.node = {text::cat("/dev/nvidia", g.minor), nv, g.minor};
    for (auto& m : g.mig_instances) {
      m.cap_nodes.clear();
      auto gi = cap_node(f, mig_gi_cap_key(g.minor, m.gi_id));
      auto ci = cap_node(f, mig_ci_cap_key(g.minor, m.gi_id, m.ci_id));
      if (gi && ci) m.cap_nodes = {*gi, *ci};
    }
  }
}

}  // namespace gpufrac
