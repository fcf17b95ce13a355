// The ledger's records of GPUs in MPS mode (version 7, core/ledger/ledger_json.hpp; docs/architecture.md
// "SM sharing"): pure edits of a LedgerState, applied by the Ledger under its lock. The transaction
// that books a GPU's first SM share records the GPU (so no time share lands there while its MPS
// daemon starts); releasing its last SM share sets `since`; the daemon's keeper (nvml/mps_keeper.hpp)
// drops the record once the daemon is stopped and the compute mode restored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

// The record of a GPU, or null.
const MpsGpuRecord* find_mps_record(const LedgerState& state, const std::string& gpu_uuid);
// Records each GPU of an SM share in `granted` that has no record yet, since `now`. Returns the
// GPUs it recorded (the provisioner then starts their daemons).
std::vector<std::string> record_mps_gpus(LedgerState& state, const std::vector<Grant>& granted, std::int64_t now);
// After `released` left the entries: each GPU of an SM share among them that has no SM share left
// is idle from `now` (recorded if it was not).
void record_mps_idle(LedgerState& state, const std::vector<LedgerEntry>& released, std::int64_t now);
// Removes the record of a GPU; false when there was none.
bool drop_mps_record(LedgerState& state, const std::string& gpu_uuid);
// The SM shares on a GPU now.
std::size_t sm_shares_on(const LedgerState& state, const std::string& gpu_uuid);
// Recorded GPUs without an SM share whose `since` is at least `timeout_s` before `now`, by uuid.
std::vector<std::string> expired_mps_gpus(const LedgerState& state, std::uint32_t timeout_s, std::int64_t now);

}  // namespace gpufrac
