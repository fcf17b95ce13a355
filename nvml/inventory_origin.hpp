// Whether the inventory cache still describes the node (docs/architecture.md "Host state"): the
// cache records where its inventory came from (core/inventory/inventory.hpp InventoryOrigin), and
// every read of it by a front-end, status or metrics compares that with the node as it is now,
// without NVML (the static hook and wrapper never load it):
//  - a simulated machine: the machine file's absolute path and the FNV-1a 64 hash of its content
//    (a stat and a read of a small file);
//  - a real node: the kernel module's version in <host-root>/proc/driver/nvidia/version and the GPU
//    UUID of each <host-root>/proc/driver/nvidia/gpus/<bus id>/information (the driver writes these
//    for every GPU it drives; a GPU added, removed or swapped, or another driver, changes them).
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac {

// The origin of an inventory discovered now with this config.
Result<InventoryOrigin> current_origin(const Config& cfg);

// "" when the two are the same (or the cache, written before origins, records none); else what
// changed, in words ("the machine file is now
// /m/a100-40gb-x2.yaml, was /m/dgx-8gpu-mixed.yaml", "driver 550.54.15 -> 560.35.03", ...).
std::string origin_change(const std::optional<InventoryOrigin>& cached, const InventoryOrigin& now);

// The GPU UUID line of a /proc/driver/nvidia/gpus/<bus id>/information text ("" when none).
std::string uuid_of_gpu_information(std::string_view text);

}  // namespace gpufrac
