// gpufrac's devices as Kubernetes DRA sees them (driver gpufrac.io, one pool per node named after
// the node): a GPU not in MIG mode is one device "gpu-<index>" that allows many allocations, each
// consuming part of its "memory" capacity and of its "compute" capacity (percent of its time); an existing MIG instance
// is a device "gpu-<index>-mig-<gi>-<ci>" allocated whole. On a dynamic-MIG GPU (mig.mode dynamic, in MIG mode) every
// profile at every placement is a device "gpu-<index>-mig-<profile>-<profile id>-<start>" (profile name without dots
// and signs: 1g.10gb+me -> 1g10gbme), allocated whole: preparing it reuses or creates the instance at exactly that
// placement, so the published devices do not change as instances come and go. Names are derived from the inventory,
// never parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/inventory.hpp"

namespace gpufrac::dra {

inline constexpr const char* kDriverName = "gpufrac.io";
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
  bool whole() const { return mig != nullptr || profile != nullptr; }  // never shared
  std::uint64_t memory_bytes() const;
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
