// What a node has: driver, GPUs, MIG profiles and instances, and the device nodes each needs.
// Both backends (real NVML via dlopen, simulated machine file) produce this one value; everything
// downstream (allocator, CDI, hook) reads only this. Plain data: compare with ==, serialise to JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"
#include "core/inventory/gpu_link.hpp"

namespace gpufrac {

inline constexpr std::uint64_t kMiB = 1ull << 20;
inline constexpr std::uint64_t kGiB = 1ull << 30;

// A character device node the container needs, with its numbers read from the host.
struct DeviceNodeInfo {
  std::string path;         // path inside the container and on the host (under host-root), e.g. /dev/nvidia0
  std::int64_t major = -1;  // -1 when the host does not list the driver (no /proc/devices entry)
  std::int64_t minor = -1;
  bool operator==(const DeviceNodeInfo&) const = default;
};

struct MigPlacement {
  std::uint32_t start = 0;  // first memory slice
  std::uint32_t size = 0;   // memory slices
  bool operator==(const MigPlacement&) const = default;
  bool overlaps(const MigPlacement& o) const { return start < o.start + o.size && o.start < start + size; }
};

// A compute instance profile of a GPU instance profile as NVML reports it for a GPU instance of that
// profile (nvmlComputeInstanceProfileInfo_t plus its possible placements inside the GPU instance, in
// compute slices). NVML answers these only for an existing GPU instance.
struct MigComputeProfile {
  std::uint32_t index = 0;                      // NVML_COMPUTE_INSTANCE_PROFILE_* constant used to query it
  std::uint32_t id = 0;                         // CI profile id used by create/placement calls
  std::uint32_t slices = 0;                     // sliceCount: compute slices
  std::uint32_t max_count = 0;                  // instanceCount
  std::uint32_t multiprocessors = 0;            // multiprocessorCount: SMs the compute instance owns
  std::vector<std::uint32_t> placement_starts;  // first compute slice of each possible placement
  std::uint32_t placement_size = 0;             // compute slices each placement occupies
  bool operator==(const MigComputeProfile&) const = default;
};

// A GPU instance profile as NVML reports it (nvmlGpuInstanceProfileInfo_t plus placements).
struct MigProfile {
  std::uint32_t index = 0;           // NVML_GPU_INSTANCE_PROFILE_* constant used to query it
  std::uint32_t id = 0;              // GI profile id used by create/placement calls
  std::string name;                  // e.g. "1g.10gb", "1g.10gb+me"
  std::uint32_t compute_slices = 0;  // sliceCount
  std::uint32_t memory_slices = 0;   // size of every placement
  std::uint64_t memory_mib = 0;      // memorySizeMB
  std::uint32_t max_count = 0;       // instanceCount
  std::uint32_t multiprocessors = 0;
  std::uint32_t copy_engines = 0, decoders = 0, encoders = 0, jpegs = 0, ofas = 0;
  std::vector<std::uint32_t> placement_starts;  // possible placements (size = memory_slices)
  // Its compute instance profiles, by slices: known once NVML answered for a GPU instance of this
  // profile (discovery keeps what an earlier one learned); empty while unknown.
  std::vector<MigComputeProfile> compute_profiles;
  const MigComputeProfile* compute_profile_by_id(std::uint32_t id) const;
  bool operator==(const MigProfile&) const = default;
};

// One MIG device: a GPU instance and the compute instance inside it that a container uses.
struct MigInstance {
  std::uint32_t gi_id = 0;
  std::uint32_t ci_id = 0;
  std::uint32_t profile_id = 0;  // GI profile id
  std::string profile_name;
  std::string uuid;  // MIG-<uuid>
  std::uint64_t memory_bytes = 0;
  MigPlacement placement;
  std::uint32_t compute_slices = 0;       // of the compute instance
  std::uint32_t ci_profile_id = 0;        // its compute instance profile id
  std::uint32_t ci_start = 0;             // its first compute slice inside the GPU instance
  std::uint32_t multiprocessors = 0;      // SMs it owns (0: unknown)
  std::vector<DeviceNodeInfo> cap_nodes;  // /dev/nvidia-caps/nvidia-cap<gi access>, <ci access>
  bool operator==(const MigInstance&) const = default;
};

struct Gpu {
  std::uint32_t index = 0;
  std::string uuid;         // GPU-<uuid>
  std::string name;         // e.g. "NVIDIA A100-SXM4-40GB"
  std::string pci_bus_id;   // e.g. "00000000:07:00.0"
  std::uint32_t minor = 0;  // /dev/nvidia<minor>
  std::uint64_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  bool mig_capable = false;                // nvmlDeviceGetMigMode answers (Ampere and newer data-centre GPUs)
  bool mig_enabled = false;                // current mode
  bool mig_pending = false;                // pending mode (after reset)
  std::vector<MigProfile> mig_profiles;    // what NVML reports: only while MIG mode is enabled
  std::vector<MigInstance> mig_instances;  // existing instances, by (gi, ci)
  bool memory_limits = false;              // the driver sets per-cgroup memory limits on it (r615+)
  DeviceNodeInfo node;                     // /dev/nvidia<minor>
  // Topology (core/inventory/gpu_link.hpp): the NUMA node of the GPU (nullopt: unknown) and its link to every
  // other GPU of the node, in index order (empty: unknown, e.g. a cache written before topology).
  std::optional<std::uint32_t> numa_node;
  std::vector<GpuLink> links;
  const GpuLink* link_to(const std::string& uuid) const;  // null when unknown
  std::uint32_t memory_slices() const;                    // 8 on A100/H100, 4 on A30; 0 while MIG mode is off
  const MigProfile* profile_by_name(const std::string& name) const;
  const MigProfile* profile_by_id(std::uint32_t id) const;
  bool operator==(const Gpu&) const = default;
};

// What kind of driver file a container gets (docs/architecture.md "The driver's user space").
enum class DriverFileKind { library, link, binary, firmware, socket };
const char* to_string(DriverFileKind k);

// One file of the NVIDIA driver's user space, bind-mounted into containers.
struct DriverFile {
  DriverFileKind kind = DriverFileKind::library;
  std::string host_path;       // the real file on the host (under host-root and driver.root)
  std::string container_path;  // canonical (merged /usr): /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
  bool operator==(const DriverFile&) const = default;
};

// The driver's user-space files found at inventory refresh (nvml/driver_discovery.hpp): the
// libraries of exactly the loaded version, their SONAME and development links (a link is a bind of
// its target at the link's path: a mount, so read-only and shared roots get it too), the binaries,
// the GSP firmware and the IPC sockets. Empty when no driver user space was found.
struct DriverFiles {
  std::string version;                    // "550.54.15" (the libraries' suffix)
  std::string root;                       // the driver root on the host, e.g. "/" or "/run/nvidia/driver"
  std::vector<DriverFile> files;          // in mount order
  std::vector<std::string> library_dirs;  // container directories of the libraries (loader cache)
  bool empty() const { return files.empty(); }
  bool operator==(const DriverFiles&) const = default;
};

// What an inventory was discovered from, recorded in the cache and compared with the node on every
// read of it (nvml/inventory_origin.hpp): a simulated machine by its file, a real node by what the
// driver's procfs says (the static front-ends never load NVML).
struct InventoryOrigin {
  std::string machine;            // simulated: the machine file's absolute path
  std::string machine_hash;       // simulated: FNV-1a 64 of its content, hex
  std::string driver;             // real: the kernel module's version (/proc/driver/nvidia/version)
  std::vector<std::string> gpus;  // real: the GPU UUIDs of /proc/driver/nvidia/gpus/*/information, sorted
  bool operator==(const InventoryOrigin&) const = default;
};

struct Inventory {
  std::string driver_version;             // e.g. "550.54.15"
  std::string source;                     // "nvml:<library>" or "simulated:<file>" (not compared)
  std::optional<InventoryOrigin> origin;  // nullopt: a cache written before origins (not compared)
  std::vector<Gpu> gpus;
  std::vector<DeviceNodeInfo> control_nodes;  // /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools
  DriverFiles driver;                         // the driver's user space (empty: none found)

  const Gpu* gpu_by_index(std::uint32_t index) const;
  const Gpu* gpu_by_uuid(const std::string& uuid) const;
  // Finds a MIG instance by its MIG-<uuid>, returning its parent GPU as well.
  std::optional<std::pair<const Gpu*, const MigInstance*>> mig_by_uuid(const std::string& uuid) const;
  bool same_hardware(const Inventory& o) const;  // == except `source`
};

// The first driver branch with per-cgroup device-memory limits, and a version string's major
// number ("615" of "615.20.03"; 0 when it does not start with one).
inline constexpr unsigned kMemoryLimitsDriverMajor = 615;
unsigned driver_major(std::string_view version);

// Told the new inventory after the node changed under gpufrac (dynamic MIG created or destroyed an
// instance). The layer above decides what follows (the CLI rewrites the CDI spec); an error it
// returns is reported as a warning, never a failed change.
using InventoryListener = std::function<Result<>(const Inventory&)>;

nlohmann::json to_json(const Inventory& inv);
Result<Inventory> inventory_from_json(const nlohmann::json& j);

}  // namespace gpufrac
