// The ResourceSlices (resource.k8s.io/v1, the 1.35+ split model) that publish a node's devices:
// slices of sharedCounters (one counter set per GPU: its memory, and its MIG memory slices while
// MIG mode is on; at most 8 sets per slice), then slices of devices (k8s/dra_devices.hpp; at most
// 64 per slice, since every device consumes counters). A shareable GPU consumes its whole counter
// set with its first share, a MIG instance its memory and slices, so the scheduler never places a
// share and a MIG device on the same memory. Pure: the publisher sends these documents.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac::dra {

inline constexpr std::size_t kMaxDevicesPerSlice = 64;  // 128, or 64 when devices consume counters
inline constexpr std::size_t kMaxCounterSetsPerSlice = 8;

struct SliceOptions {
  std::string node;                       // node name = pool name
  std::string node_uid;                   // the Node's uid for the ownerReference ("": none)
  std::uint64_t share_step = 1ull << 30;  // memory a share is rounded up to (requestPolicy step)
  std::int64_t generation = 1;            // pool.generation
  MigConfig mig;                          // dynamic-MIG GPUs publish profile devices
};

// The slices in publishing order; each has metadata.generateName "<5 hex digits>-gpufrac.io-<node>-".
std::vector<nlohmann::json> render_resource_slices(const Inventory& inventory, const SliceOptions& options);

}  // namespace gpufrac::dra
