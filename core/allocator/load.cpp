#include "core/allocator/load.hpp"

#include <set>

#include "core/quantity.hpp"

namespace gpufrac {

const DeviceLoad& Load::of(const std::string& device_uuid) const {
  static const DeviceLoad kEmpty;
  auto it = by_device.find(device_uuid);
  return it == by_device.end() ? kEmpty : it->second;
}

Load compute_load(const Inventory& inv, const std::vector<LedgerEntry>& entries) {
  std::set<std::string> known;
  for (const auto& g : inv.gpus) {
    known.insert(g.uuid);
    for (const auto& m : g.mig_instances) known.insert(m.uuid);
  }
  Load load;
  for (const auto& e : entries) {
    if (!known.contains(e.device_uuid)) {
      load.unknown.push_back(&e);
      continue;
    }
    auto& d = load.by_device[e.device_uuid];
    d.reserved = saturating_add(d.reserved, e.bytes);
    d.compute += e.compute_ppm;  // at most 65536 entries of at most 10^6 each: no overflow
    d.entries.push_back(&e);
    if (is_sm_share(e.compute_ppm, e.compute_mode)) ++d.sm_shares;
    if (e.exclusive && d.exclusive == nullptr) d.exclusive = &e;
  }
  return load;
}

Load compute_load(const Inventory& inv, const std::vector<LedgerEntry>& entries, const std::vector<MpsGpuRecord>& mps) {
  Load load = compute_load(inv, entries);
  for (const auto& r : mps)
    if (inv.gpu_by_uuid(r.gpu_uuid) != nullptr) load.by_device[r.gpu_uuid].mps_record = true;
  return load;
}

std::uint64_t gpu_capacity(const Gpu& gpu, double overcommit) {
  if (overcommit <= 1.0) return gpu.memory_bytes;
  const long double cap = static_cast<long double>(gpu.memory_bytes) * static_cast<long double>(overcommit);
  return cap >= 1.8e19L ? UINT64_MAX : static_cast<std::uint64_t>(cap);
}

std::uint32_t compute_free(const DeviceLoad& d) {
  return d.compute >= kWholeGpuComputePpm ? 0 : static_cast<std::uint32_t>(kWholeGpuComputePpm - d.compute);
}

}  // namespace gpufrac
