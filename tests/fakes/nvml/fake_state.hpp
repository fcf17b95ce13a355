// The fake driver's state: the GPUs of a simulated machine and their MIG configuration. Every
// NVML handle the fake hands out is a pointer into this state, and every handle it receives is
// checked against it (a stale or foreign pointer is NVML_ERROR_INVALID_ARGUMENT, never a crash).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "nvml/nvml_api.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::fake_nvml {
struct PhysicalGpu;
}

// NVML's opaque handle types, completed here.
struct nvmlDevice_st {
  gpufrac::fake_nvml::PhysicalGpu* gpu = nullptr;  // the GPU, or the parent of a MIG device
  nvmlComputeInstance_st* mig = nullptr;           // set on MIG device handles only
};

struct nvmlComputeInstance_st {
  nvmlGpuInstance_st* gi = nullptr;
  std::uint32_t id = 0;
  std::uint32_t profile_id = 0;  // compute instance profile id (MigComputeProfile::id)
  std::uint32_t slices = 0;      // compute slices
  std::uint32_t start = 0;       // first compute slice inside the GPU instance
  std::string uuid;              // MIG-<uuid> of the MIG device
  nvmlDevice_st device;          // the MIG device handle
};

struct nvmlGpuInstance_st {
  gpufrac::fake_nvml::PhysicalGpu* gpu = nullptr;
  std::uint32_t id = 0;
  gpufrac::MigProfile profile;  // its GPU instance profile
  gpufrac::MigPlacement placement;
  std::vector<std::unique_ptr<nvmlComputeInstance_st>> compute_instances;
};

namespace gpufrac::fake_nvml {

// Everything about one GPU's MIG configuration that can change at run time, in one value: the
// modes, the GPU instances with their compute instances (owned, so handles stay valid while
// others come and go) and the MIG device handle slots. It is built from the machine file at
// nvmlInit through add_gpu_instance/add_compute_instance; the create and destroy calls change it
// (fake_mig_ops.hpp), and with GPUFRAC_FAKE_NVML_STATE it is kept in a file shared between
// processes (fake_mig_file.hpp).
struct MigState {
  bool current = false;                                            // MIG mode now
  bool pending = false;                                            // MIG mode after the next reset
  std::vector<std::unique_ptr<nvmlGpuInstance_st>> gpu_instances;  // creation order
  std::vector<nvmlComputeInstance_st*> slots;  // nvmlDeviceGetMigDeviceHandleByIndex index -> MIG device
};

struct PhysicalGpu {
  Gpu model;                              // identity, memory, compute capability (its MIG fields are not used)
  std::vector<MigProfile> profile_table;  // the GPU instance profiles; empty when not MIG-capable
  MigState mig;
  nvmlDevice_st handle;

  bool mig_capable() const { return !profile_table.empty(); }
  const MigProfile* profile_by_index(std::uint32_t index) const;
  const MigProfile* profile_by_id(std::uint32_t id) const;
};

// Identity of the state file's content last read or written (changes on every atomic replace).
struct FileStamp {
  std::uint64_t inode = 0, size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// A per-cgroup device-memory limit (fake_memory_limits.hpp).
struct MemoryLimit {
  std::string gpu_uuid;
  std::string cgroup;  // "/a/b": the cgroup's path below the cgroup root
  std::uint64_t soft = 0, hard = 0;
  bool operator==(const MemoryLimit&) const = default;
};

struct State {
  std::string driver_version;
  std::vector<std::unique_ptr<PhysicalGpu>> gpus;
  std::uint64_t serial = 0;  // MIG devices created so far: new MIG UUIDs derive from it
  std::string state_file;    // GPUFRAC_FAKE_NVML_STATE, "" = this process only
  FileStamp stamp;
  std::vector<MemoryLimit> memory_limits;             // without a state file (else in <state_file>.limits)
  std::map<std::string, unsigned int> compute_modes;  // by GPU uuid, without a state file (fake_compute_mode.hpp)
};

// Loads a machine file (docs/machines.md) into a fresh state.
Result<std::unique_ptr<State>> load_state(const std::string& machine_file);
Result<std::unique_ptr<State>> state_of(const SimulatedMachine& machine);

// The machine `gpufrac simulate init-root` embedded into the copy of this library it installed
// into a simulated driver tree (empty when this is not such a copy), with only the GPUs whose
// /dev/nvidia<minor> exists, renumbered: what a real driver shows inside a container.
Result<std::optional<SimulatedMachine>> embedded_machine();

// MIG mutations. add_compute_instance takes the MIG device slot at the GPU instance's first
// memory slice when free, else the first free one, so the handle walk sees gaps and an order
// unrelated to GPU instance ids, as on a real driver. Null when no slot is left.
nvmlGpuInstance_st* add_gpu_instance(PhysicalGpu& gpu, std::uint32_t id, const MigProfile& profile,
                                     std::uint32_t start);
nvmlComputeInstance_st* add_compute_instance(nvmlGpuInstance_st& gi, std::uint32_t id, const MigComputeProfile& profile,
                                             std::uint32_t start, std::string uuid);

// Compute instance profiles: the GPU instance profile's table (the machine file's compute-profiles,
// or the derived one: core/mig/mig_device.hpp). By NVML index or by profile id; null when not offered.
const MigComputeProfile* ci_profile_by_index(const nvmlGpuInstance_st& gi, std::uint32_t index);
const MigComputeProfile* ci_profile_by_id(const nvmlGpuInstance_st& gi, std::uint32_t id);

// nvmlPciInfo_t of a GPU: busId as the machine file has it, domain, bus and device parsed from it,
// vendor id only.
void fill_pci_info(const Gpu& gpu, nvmlPciInfo_t& pci);

// Handle checks: what a handle points to, or null when it is not a live object of `state`.
nvmlDevice_st* find_device(State& state, nvmlDevice_t device);  // a GPU or a MIG device
PhysicalGpu* find_gpu(State& state, nvmlDevice_t device);       // a GPU (not a MIG device)
nvmlGpuInstance_st* find_gpu_instance(State& state, nvmlGpuInstance_t gi);
nvmlComputeInstance_st* find_compute_instance(State& state, nvmlComputeInstance_t ci);

}  // namespace gpufrac::fake_nvml
