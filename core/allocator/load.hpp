// What live bookings hold on each device of an inventory: reserved bytes, booked compute, share
// count and who.
// Pure; shared by the allocator and `gpufrac status`. The pointers refer into the entries vector
// passed in, which must outlive the result.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

struct DeviceLoad {
  std::uint64_t reserved = 0;
  std::uint64_t compute = 0;  // ppm of the GPU's time booked (sum of the bookings' compute_ppm)
  std::vector<const LedgerEntry*> entries;
  const LedgerEntry* exclusive = nullptr;  // a whole-GPU or MIG booking
  // SM sharing (docs/architecture.md "SM sharing"): the SM shares among `entries` (compute is then
  // their percent of the SMs), and whether the ledger records the GPU in MPS mode.
  std::uint32_t sm_shares = 0;
  bool mps_record = false;
  std::uint32_t shares() const { return static_cast<std::uint32_t>(entries.size()); }
  bool sm_mode() const { return sm_shares != 0 || mps_record; }
  std::uint32_t time_shares() const { return shares() - sm_shares; }
};

struct Load {
  std::map<std::string, DeviceLoad> by_device;  // by device UUID (GPU- or MIG-)
  std::vector<const LedgerEntry*> unknown;      // bookings on devices the inventory lacks
  const DeviceLoad& of(const std::string& device_uuid) const;
};

Load compute_load(const Inventory& inv, const std::vector<LedgerEntry>& entries);
// The same, with the ledger's records of GPUs in MPS mode marked (DeviceLoad::mps_record).
Load compute_load(const Inventory& inv, const std::vector<LedgerEntry>& entries, const std::vector<MpsGpuRecord>& mps);

// Memory that may be promised on a GPU: total x overcommit, in bytes.
std::uint64_t gpu_capacity(const Gpu& gpu, double overcommit);
// The GPU's time not booked yet, in ppm (0 when its bookings sum to all of it or more).
std::uint32_t compute_free(const DeviceLoad& d);

}  // namespace gpufrac
