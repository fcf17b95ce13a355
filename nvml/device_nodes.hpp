// The device nodes a GPU or MIG instance needs, with majors from /proc/devices and MIG capability
// minors from /proc/driver/nvidia-caps/mig-minors, all read under the configured host root.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac {

struct HostDriverFiles {
  std::optional<std::int64_t> nvidia_major;        // "nvidia" (>= 550.40) or "nvidia-frontend"
  std::optional<std::int64_t> uvm_major;           // "nvidia-uvm"
  std::optional<std::int64_t> caps_major;          // "nvidia-caps"
  std::map<std::string, std::int64_t> mig_minors;  // "gpu0/gi1/access" -> minor
};

// Pure parsers (unit-tested on text).
HostDriverFiles parse_proc_devices(const std::string& text);
std::map<std::string, std::int64_t> parse_mig_minors(const std::string& text);

// Reads <host_root>/proc/devices and <host_root>/proc/driver/nvidia-caps/mig-minors. Missing files
// are not errors (a host without the driver simply lists nothing).
Result<HostDriverFiles> read_host_driver_files(const std::string& host_root);

// Fills Gpu::node, MigInstance::cap_nodes and Inventory::control_nodes. Unknown majors stay -1;
// a MIG instance whose capabilities are not listed gets no cap nodes (and cannot be granted).
void attach_device_nodes(Inventory& inv, const HostDriverFiles& files);

// A device node a container is given must exist on the host: one missing under host-root is an
// error naming the root and what makes the node ("gpufrac simulate init-root" on a simulated node,
// the driver on a GPU node), so the front-ends (gpufrac-hook, gpufrac-runtime) say what fixes it.
Result<> check_host_device_node(const std::string& host_path, const std::string& path);

std::string mig_gi_cap_key(std::uint32_t gpu_minor, std::uint32_t gi);
std::string mig_ci_cap_key(std::uint32_t gpu_minor, std::uint32_t gi, std::uint32_t ci);

}  // namespace gpufrac
