// What `gpufrac status`, `gpufrac metrics` and `gpufrac gc --dry-run` read of a node: the inventory
// (the cache), the ledger without its lock, and each booking's state and live usage from its
// container's accounting region, or from the driver where it holds the booking's limit (NVML is
// opened only then). Reading never writes a file and never waits for a
// container start: the ledger is replaced whole, the regions are read with atomic loads.
#pragma once

#include <cstdint>

#include "cli/status_model.hpp"
#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "reclaim/reclaim_log.hpp"

namespace gpufrac::cli {

struct NodeView {
  Inventory inventory;
  LedgerState ledger;
  std::uint64_t ledger_file_bytes = 0;  // size of ledger.json; 0 when there is none
  StatusReport report;
  // What the burst reclaimer did (reclaim/reclaim_log.hpp); reclaim_log: its file exists.
  reclaim::ReclaimLog reclaims;
  bool reclaim_log = false;
  std::int64_t reclaimer_pid = 0;  // the burst reclaimer running now (its lock file's pid), 0: none
  std::string burst_reclaim;       // the node's burst.reclaim
};

Result<NodeView> read_node(const Config& cfg, std::int64_t now);
// The same over an inventory the caller read (gc --dry-run: cli/gc_dry_run.hpp).
Result<NodeView> read_node(const Config& cfg, std::int64_t now, Inventory inventory);

}  // namespace gpufrac::cli
