// `gpufrac gc`'s MIG part: on every dynamic-MIG GPU, under its MIG lock, a journal left by a
// killed provisioner is recovered, the idle records are brought in line with NVML, and recorded
// instances idle for mig.idle-timeout or longer are destroyed (their records dropped first, in one
// ledger transaction, so nothing books them meanwhile); the inventory cache and CDI spec follow.
// A config without a dynamic GPU returns at once (no inventory read, no NVML).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_mig.hpp"

namespace gpufrac {

struct MigReclaimReport {
  std::vector<IdleMigInstance> destroyed;  // idle past the timeout
  std::vector<IdleMigInstance> idle;       // kept for reuse
  std::vector<std::string> notes;          // recoveries and warnings, one line each
};

Result<MigReclaimReport> reclaim_idle_mig(const Config& cfg, std::int64_t now, const InventoryListener& on_changed);

}  // namespace gpufrac
