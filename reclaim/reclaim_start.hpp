// The burst reclaimer's life (docs/architecture.md "Burstable memory"): one per node, holding
// flock(<state-dir>/reclaimer.lock) (its pid in the file) while it runs; started detached on demand
// (`gpufrac reclaim start`, which the front-ends run after booking a share with a burst limit, and
// gc while burst bookings remain); leaving once no booking has a burst limit. The kernel drops the
// lock of a reclaimer that dies, and its keeper (reclaim/reclaim_keeper.hpp), waiting for that lock,
// takes over.
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac::reclaim {

std::string reclaimer_lock_path(const Config& cfg);

// Under the ledger's lock: no burst booking left, so the reclaimer (or its keeper) lets `lock` (the
// reclaimer's) go and leaves: true. A state directory that is gone (a node's /run emptied) is left
// at once.
bool leave_when_idle(const Config& cfg, fs::UniqueFd& lock);

// Runs the reclaimer here, holding its lock, until no booking has a burst limit: its exit code.
int run_reclaimer_locked(const Config& cfg, fs::UniqueFd lock);

// Runs the reclaimer in this process until no booking has a burst limit: its exit code, or -1 when
// another reclaimer holds the lock.
Result<int> run_reclaimer_here(const Config& cfg);

// Starts a detached reclaimer (its own session, stdio on /dev/null, no inherited descriptor) unless
// one runs; true when it started one. Returns at once.
Result<bool> start_detached_reclaimer(const Config& cfg);

// In a forked child: forks again into a session of its own with stdio on /dev/null, no other
// descriptor (the caller's pipes see EOF at once) and / as its directory. Returns in the grandchild;
// the child exits.
void detach_from_caller();

// For gc: with a burst booking left, a reclaimer runs (started if none does); with none left and no
// reclaimer running, its files (reclaims.json, reclaimer.lock) are removed. One line for the
// report, or "" when there was nothing to do.
std::string tidy_reclaimer(const Config& cfg, const LedgerState& state);

}  // namespace gpufrac::reclaim
