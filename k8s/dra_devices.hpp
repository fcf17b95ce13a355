// gpufrac's devices as Kubernetes DRA sees them (driver gpufrac.io, one pool per node named after
// the node): a GPU not in MIG mode is one device "gpu-<index>" that allows many allocations, each
// consuming part of its "memory" capacity and of its "compute" capacity (percent of its time); an existing MIG instance
// (a compute instance: the three of a GPU instance split 1c x3 are three) is a device "gpu-<index>-mig-<gi>-<ci>"
// allocated whole. On a dynamic-MIG GPU (mig.mode dynamic, in MIG mode) every profile at every placement is a device
// "gpu-<index>-mig-<profile>-<profile id>-<start>" (profile name without dots and signs: 1g.10gb+me -> 1g10gbme),
// allocated whole: preparing it reuses or creates the instance at exactly that placement, so the published devices do
// not change as instances come and go; and every compute instance profile smaller than its GPU instance, at every
// placement of the GPU instance, once for each it may hold: "gpu-<index>-mig-<C>c<profile>-<profile id>-<start>-<n>"
// (gpu-0-mig-1c3g40gb-9-4-2: the third 1c of a 3g.40gb at slice 4); preparing it takes or makes a compute instance of
// that size in the GPU instance at that placement (creating the GPU instance when none is there). Names are derived
// from the inventory, never parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac::dra {

inline constexpr const char* kDriverName = "gpufrac.io";
// A shareable GPU's second capacity: an exact share of the whole GPU in parts per million (250k is a
// quarter), booked as gpufrac.io/fraction books it. The scheduler counts it beside `memory`.
inline constexpr const char* kFractionCapacity = "fraction";
// A shareable GPU's "compute" capacity: percent of its time (a claim's
// capacity.requests.compute: "30"); consumed 0 (the request policy's default) means "not asked":
// prepare books the default share, as for a container without gpufrac.io/compute.
inline constexpr std::uint32_t kComputeCapacity = 100;

struct DraDevice {
  std::string name;
  const Gpu* gpu = nullptr;
  const MigInstance* mig = nullptr;     // an existing instance (static MIG)
  const MigProfile* profile = nullptr;  // a profile at a placement (dynamic MIG)
  std::uint32_t placement_start = 0;    // profile only: the instance's first memory slice
  // Dynamic MIG: a compute instance of this profile smaller than `profile`'s GPU instance, the
  // ci_ordinal-th of its kind there (prepare takes any free placement of it).
  std::optional<MigComputeProfile> ci;
  std::uint32_t ci_ordinal = 0;
  bool whole() const { return mig != nullptr || profile != nullptr; }  // never shared
  // What a booking of it takes: the GPU's memory, an instance's, or for a compute instance smaller
  // than its GPU instance the equal split of the GPU instance's memory (core/mig/mig_device.hpp).
  std::uint64_t memory_bytes() const;
  // The compute slices it takes of its GPU instance, and the GPU instance's (equal for a whole one).
  std::pair<std::uint32_t, std::uint32_t> compute_share() const;
  std::string device_profile() const;  // "1c.3g.40gb", "3g.40gb"
};

// Every device of the inventory in publishing order (GPUs by index, each followed by its MIG
// instances by gi, ci, or on a dynamic-MIG GPU its profiles in inventory order, each at every
// placement). GPUs in MIG mode are not shareable and appear only through their MIG devices.
std::vector<DraDevice> dra_devices(const Inventory& inventory, const MigConfig& mig = {});
std::optional<DraDevice> find_dra_device(const Inventory& inventory, std::string_view name, const MigConfig& mig = {});

// A Kubernetes quantity for an amount of bytes: "40Gi", "4864Mi", or the plain byte count.
std::string k8s_quantity(std::uint64_t bytes);
// The inverse for the quantities the scheduler writes (consumedCapacity): a plain integer is bytes;
// suffixes Ki Mi Gi Ti Pi (binary), k M G T P (decimal); a decimal point only where the result is a
// whole number of bytes. The message names the accepted form.
Result<std::uint64_t> parse_k8s_quantity(std::string_view text);

}  // namespace gpufrac::dra
