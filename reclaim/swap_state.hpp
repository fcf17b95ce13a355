// A swapped-out share's state (docs/architecture.md "Swap"): which of its processes on which GPU the
// reclaimer checkpointed, what they held there, since when and for whom. One file per container,
// <state-dir>/containers/<key>/swap, written by the reclaimer alone (replaced atomically) before it
// locks a process and again once they are checkpointed; removed once they are restored. The
// container directory is never mounted into a container (only its limit, usage and preload files
// are): this is host state. A reclaimer that starts (one killed mid-swap, its keeper) reads it to
// finish the swap or unlock what it left locked; `gpufrac status` reads it to show SWAPPED.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac::reclaim {

struct SwappedProcess {
  std::int64_t pid = 0;
  std::uint64_t start = 0;  // its start time (field 22 of /proc/<pid>/stat): a reused pid is another
  std::uint64_t bytes = 0;  // what the driver saw it hold on the GPU before the checkpoint
  bool operator==(const SwappedProcess&) const = default;
};

// out: being swapped out (written before the first lock); swapped: every process listed is
// checkpointed; in: being restored (written before the first restore).
enum class SwapPhase { out, swapped, in };
const char* to_string(SwapPhase p);

struct SwapState {
  std::string gpu_uuid;
  std::string id;     // the container id (or claim), for people
  std::string owner;  // the share whose request for memory back caused it
  SwapPhase phase = SwapPhase::out;
  std::int64_t since = 0;  // seconds since the epoch
  std::vector<SwappedProcess> processes;
  std::uint64_t bytes() const;
  bool operator==(const SwapState&) const = default;
};

std::string swap_state_path(const Config& cfg, const std::string& key);
// The state of the container `key`; nullopt when it has none (not swapped).
Result<std::optional<SwapState>> load_swap_state(const Config& cfg, const std::string& key);
Result<> save_swap_state(const Config& cfg, const std::string& key, const SwapState& s);
void remove_swap_state(const Config& cfg, const std::string& key);

}  // namespace gpufrac::reclaim
