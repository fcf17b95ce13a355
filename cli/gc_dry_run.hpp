// `gpufrac gc --dry-run`: what gc would do, from what `gpufrac status` reads (cli/node_view.hpp),
// writing nothing: the bookings of exited processes, reused pids and expired pending bookings (the
// ledger's own reclaim rules, through the same liveness check), the container directories and the
// dead slots of accounting regions that would go, the stale temp files of killed ledger writers,
// and the dynamic MIG instances idle past mig.idle-timeout, the MPS daemons idle past
// compute.mps-idle-timeout. Half-made MIG instances and half-started MPS daemons are found only by
// gc itself (it asks the driver and the daemons' records).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/ledger/ledger.hpp"
#include "nvml/mig_reclaim.hpp"
#include "nvml/mps_keeper.hpp"

namespace gpufrac::cli {

// What gc does beyond the ledger: per-container directories whose container holds no booking any
// more are removed, and the accounting regions of booked containers drop their dead processes.
struct FilesReport {
  std::vector<std::string> dirs_removed;
  unsigned dead_slots = 0;
  std::vector<std::string> compute_slots_freed;        // container keys whose compute slots had no booking
  std::vector<std::string> compute_arbiters_removed;   // GPU uuids: no compute share left on the GPU
  std::vector<std::string> compute_arbiters_repaired;  // "<uuid>: <what>": a lease file a container changed
};

// A compute slot younger than this is left alone by gc (its booking may be in the making).
inline constexpr std::uint64_t kComputeSlotMinAgeS = 60;

// Driver limits of released or reclaimed bookings (the ledger's limits_to_clear): cleared through
// the driver, or kept (one line each) for the next gc.
struct LimitsReport {
  std::vector<LimitToClear> cleared;
  std::vector<std::string> errors;
};

struct GcPlan {
  GcReport ledger;
  FilesReport files;
  MigReclaimReport mig;
  LimitsReport limits;
  MpsReclaim mps;  // SM sharing: MPS daemons stopped (idle past compute.mps-idle-timeout) and kept
};

Result<GcPlan> plan_gc(const Config& cfg, std::int64_t now);

}  // namespace gpufrac::cli
