// Starting the burst reclaimer from a front-end (docs/architecture.md "Burstable memory"): after a
// booking with a limit above its request, `<cli.path> reclaim start` runs as exec/cli_exec.hpp runs
// every helper; it returns at once, leaving a detached reclaimer when none runs. A node whose
// bookings have no burst limit never starts one.
#pragma once

#include <vector>

#include "core/config/config.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

// Whether one of the bookings has a limit above its request.
bool wants_reclaimer(const std::vector<LedgerEntry>& bookings);

// Runs `reclaim start`; a failure is a warning in the log (the share then borrows nothing: without a
// reclaimer's beat its shim holds it to its request).
void start_reclaimer(const Config& cfg);

}  // namespace gpufrac
