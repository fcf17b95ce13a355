// The burst reclaimer's keeper (docs/architecture.md "Burstable memory"): a second detached process
// beside a running reclaimer, so that an owner's request for memory back always finds one. The
// keeper holds flock(<state-dir>/reclaimer.keeper) (its pid in the file) and waits, blocked, for
// the reclaimer's lock: when the reclaimer dies (killed, crashed) the kernel drops that lock, the
// keeper takes it within milliseconds, before the shims' 2 s beat goes stale, and becomes the
// reclaimer unless the ledger, read under its lock, holds no burst booking (then it leaves, as a
// reclaimer would). Every reclaimer starts a keeper when none runs, at its start and about once a
// second, so a killed keeper is replaced too.
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac::reclaim {

std::string keeper_lock_path(const Config& cfg);

// Starts a detached keeper (`<cli.path> reclaim keep`: its own session, stdio on /dev/null, no
// inherited descriptor, a fresh process image) unless one holds its lock. Returns at once; a failure
// is a warning in the log.
void ensure_keeper(const Config& cfg);

// `gpufrac reclaim keep`: waits for the reclaimer's lock, then runs the reclaimer while a booking
// has a burst limit; its exit code (0 at once when another keeper runs).
Result<int> run_keeper(const Config& cfg);

}  // namespace gpufrac::reclaim
