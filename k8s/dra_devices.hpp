// gpufrac's devices as Kubernetes DRA sees them (driver gpufrac.io, one pool per node named after
// the node): a GPU not in MIG mode is one device "gpu-<index>" that allows many allocations, each
// consuming part of its "memory" capacity; an existing MIG instance is a device
// "gpu-<index>-mig-<gi>-<ci>" allocated whole. Names are derived from the inventory, never parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/inventory.hpp"

namespace gpufrac::dra {

inline constexpr const char* kDriverName = "gpufrac.io";

struct DraDevice {
  std::string name;
  const Gpu* gpu = nullptr;
  const MigInstance* mig = nullptr;  // null: the whole GPU, shareable
  std::uint64_t memory_bytes() const { return mig ? mig->memory_bytes : gpu->memory_bytes; }
};

// Every device of the inventory in publishing order (GPUs by index, each followed by its MIG
// instances by gi, ci). GPUs in MIG mode are not shareable and appear only through their instances.
std::vector<DraDevice> dra_devices(const Inventory& inventory);
std::optional<DraDevice> find_dra_device(const Inventory& inventory, std::string_view name);

// A Kubernetes quantity for an amount of bytes: "40Gi", "4864Mi", or the plain byte count.
std::string k8s_quantity(std::uint64_t bytes);
// The inverse for the quantities the scheduler writes (consumedCapacity): a plain integer is bytes;
// suffixes Ki Mi Gi Ti Pi (binary), k M G T P (decimal); a decimal point only where the result is a
// whole number of bytes. The message names the accepted form.
Result<std::uint64_t> parse_k8s_quantity(std::string_view text);

}  // namespace gpufrac::dra
