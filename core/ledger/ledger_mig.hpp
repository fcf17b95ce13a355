// The ledger's idle records of dynamic MIG instances (version 2, core/ledger/ledger_json.hpp): pure edits
// of a LedgerState, applied by the Ledger under its lock. An instance of a dynamic GPU whose
// booking is released or reclaimed becomes idle (recorded with the time); booking it again, or
// the provisioner deciding to destroy it, removes the record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

// True when the entry's GPU is in dynamic MIG mode by the config.
bool on_dynamic_gpu(const LedgerEntry& e, const MigConfig& mig);

// Records the MIG instances of `released` that sit on dynamic GPUs and have no other booking
// left in `state` as idle since `now` (an existing record keeps its time).
void record_idle(LedgerState& state, const std::vector<LedgerEntry>& released, const MigConfig& mig, std::int64_t now);

// Removes the record of one instance; false when there was none.
bool drop_idle_record(LedgerState& state, const std::string& uuid);

// The record of one instance, or null.
const MigIdleRecord* find_idle_record(const LedgerState& state, const std::string& uuid);

// Brings the records of one dynamic GPU in line with its instances (call holding its MIG lock, with
// an inventory read after the last change): an instance with neither booking nor record is
// adopted as idle since `now`; records of instances that are gone, or booked, are dropped.
// Returns whether anything changed.
bool sync_idle_records(LedgerState& state, const Gpu& gpu, std::int64_t now);

// One recorded idle instance, for gpufrac status and gc.
struct IdleMigInstance {
  std::uint32_t gpu_index = 0;
  std::string gpu_uuid;
  std::string uuid;
  std::string profile;
  std::uint32_t gi = 0, ci = 0;
  MigPlacement placement;
  std::int64_t idle_s = 0;
  bool operator==(const IdleMigInstance&) const = default;
};

// The recorded idle instances the inventory lists, by GPU index, GI, CI.
std::vector<IdleMigInstance> idle_mig_instances(const Inventory& inv, const LedgerState& state, std::int64_t now);

// Recorded idle instances of `gpu` idle for at least `timeout_s` at `now`, by uuid.
std::vector<std::string> expired_idle(const LedgerState& state, const Gpu& gpu, std::uint32_t timeout_s,
                                      std::int64_t now);

}  // namespace gpufrac
