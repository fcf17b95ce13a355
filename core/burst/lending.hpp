// Burstable memory, the reclaimer's pure decisions (docs/architecture.md "Burstable memory"): how
// far a share may borrow, who is a borrower, and what a request for memory back gets. Two views of
// each share's use: what its container's shim publishes in its usage region (written by the
// container: it decides only who may borrow) and what the driver sees its processes hold (the only
// view a reclaim trusts). No I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"

namespace gpufrac {

// `allowance` below is burst.context-allowance: what the driver may count per process beyond what
// the shim counts (a CUDA context the shim never sees); a share is past its request by the driver's
// view only beyond that much per process.

// One share of a GPU (a container's bookings there, or a claim's).
struct BurstShare {
  std::string key;              // the container id (or claim), for messages
  std::uint64_t request = 0;    // bytes booked
  std::uint64_t limit = 0;      // the most it may use (its request without a burst limit)
  std::uint64_t published = 0;  // what its usage region says its live processes hold
  std::uint64_t held = 0;       // what the driver sees its processes hold
  std::uint32_t processes = 0;  // its processes the driver lists
  bool burst() const { return limit > request; }
};

// The most share i may hold now: the GPU's memory less, for every other share, its request or what it
// publishes, whichever is more; at most its limit, at least its request.
std::uint64_t lend_ceiling(const std::vector<BurstShare>& shares, std::size_t i, std::uint64_t total);

// How far the driver sees a share past its request, beyond the context allowance (0 when within).
std::uint64_t over_request(const BurstShare& s, std::uint64_t allowance);

// A region the driver contradicts: it publishes less than the driver sees its processes hold
// (beyond the context allowance), or more than they hold. Flagged, never believed.
bool region_disagrees(const BurstShare& s, std::uint64_t allowance);

// The answers of limits_abi.h (GPUFRAC_RECLAIM_*).
enum class ReclaimAnswer { freed = 1, retry = 2, refused = 3, not_owner = 4, none = 5, untold = 6 };
const char* to_string(ReclaimAnswer a);

struct ReclaimStep {
  ReclaimAnswer answer = ReclaimAnswer::none;
  std::optional<std::size_t> victim;  // the share whose process to stop (answer freed)
  std::string why;                    // one line for the log
};

// The next step for a request of `bytes` by shares[asker] on a GPU with `free` bytes not held by any
// process (the driver's view). not_owner: the driver sees the asker past its request with the bytes;
// retry: the GPU has them free; none: no other share is past its request; refused: burst.reclaim is
// refuse; else (answer freed) the victim: the borrower furthest past its request (then the one
// holding most, then the first). The caller stops a process of the victim and asks again until the
// memory is free or an answer other than freed comes.
ReclaimStep plan_reclaim(const std::vector<BurstShare>& shares, std::size_t asker, std::uint64_t bytes,
                         std::uint64_t free, const BurstConfig& cfg);

}  // namespace gpufrac
