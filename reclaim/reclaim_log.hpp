// What the burst reclaimer did, for `gpufrac status` and `gpufrac metrics`
// (<state-dir>/reclaims.json, written by the reclaimer alone, replaced atomically): the latest
// reclaims (at most kMaxReclaimEvents), how many processes it stopped and how many requests it
// refused on each GPU and of each share, the shares whose usage region the driver contradicts
// (flagged, never believed) and those it cannot tell apart. A missing file is an empty log.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac::reclaim {

inline constexpr std::size_t kMaxReclaimEvents = 64;

struct ReclaimEvent {
  std::int64_t time = 0;  // seconds since the epoch
  std::string gpu_uuid;
  std::string victim;       // the borrower's container id (or claim)
  std::int64_t pid = 0;     // the process stopped
  std::uint64_t bytes = 0;  // what the driver saw it hold
  std::string owner;        // the container (or claim) that needed the memory
  // What was done: "stopped" (SIGKILL), "swapped out" (checkpointed, burst.reclaim: swap) or
  // "swapped in" (restored once the GPU had room; owner is then "").
  std::string action = "stopped";
  std::string reason;  // a stop under burst.reclaim: swap: why swap was not used
  bool operator==(const ReclaimEvent&) const = default;
};

struct ReclaimFlag {
  std::string gpu_uuid;
  std::string id;                         // the container id (or claim)
  std::uint64_t published = 0, held = 0;  // what its region says, what the driver sees
  std::int64_t since = 0;
  bool operator==(const ReclaimFlag&) const = default;
};

// A share whose processes the kernel cannot tell from another share's on the GPU (one cgroup):
// neither borrows (its ceiling is its request) and the reclaimer takes nothing back for it.
struct ReclaimUntold {
  std::string gpu_uuid;
  std::string id;                 // the container id (or claim)
  std::vector<std::string> with;  // the ids of the shares it cannot be told from
  bool operator==(const ReclaimUntold&) const = default;
};

struct ReclaimLog {
  std::vector<ReclaimEvent> events;                    // oldest first
  std::map<std::string, std::uint64_t> stopped;        // by GPU uuid
  std::map<std::string, std::uint64_t> refused;        // by GPU uuid (burst.reclaim: refuse)
  std::map<std::string, std::uint64_t> share_stopped;  // by container key: its processes stopped
  std::map<std::string, ReclaimFlag> flags;            // by container key
  std::map<std::string, ReclaimUntold> untold;         // by container key
  // burst.reclaim: swap, by container key: swap-outs and swap-ins, and the bytes each moved.
  std::map<std::string, std::uint64_t> swap_outs, swap_ins, swap_out_bytes, swap_in_bytes;
  std::map<std::string, std::uint64_t> gpu_swap_outs;  // by GPU uuid
  bool operator==(const ReclaimLog&) const = default;
};

std::string reclaim_log_path(const Config& cfg);
Result<ReclaimLog> load_reclaim_log(const std::string& path);
Result<> save_reclaim_log(const std::string& path, const ReclaimLog& log);
// Adds an event (dropping the oldest past kMaxReclaimEvents) and counts it.
// `key` is the victim's container key (share_stopped counts by it).
void record_stop(ReclaimLog& log, ReclaimEvent e, const std::string& key);
// Adds a swap event ("swapped out" or "swapped in") and counts it, with its bytes.
void record_swap(ReclaimLog& log, ReclaimEvent e, const std::string& key);

}  // namespace gpufrac::reclaim
