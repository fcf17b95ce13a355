// Host memory for burst.reclaim: swap (docs/architecture.md "Swap"): a checkpoint moves a process's
// GPU memory into its own host memory, charged to its memory cgroup, so a swap is made only where
// that cgroup has room for it and within the node's budget (swap.host-memory). Each check gives why
// not in one line ("" when the swap fits). Pure but for the cgroup's files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpufrac::reclaim {

// What the memory cgroup of pid may still take: memory.max less memory.current (cgroup v2, the
// "0::" line of /proc/<pid>/cgroup) or memory.limit_in_bytes less memory.usage_in_bytes (v1, its
// "memory" line, under <cgroup-root>/memory); nullopt without a limit (or when it cannot be read).
std::optional<std::uint64_t> cgroup_room(const std::string& proc_root, const std::string& cgroup_root,
                                         std::int64_t pid);

// Why a swap of `bytes` does not fit: the cgroup's room (nullopt: no limit), then the node's budget
// (0: none) less what is swapped out already ("" when it fits).
std::string swap_room_problem(std::uint64_t bytes, std::optional<std::uint64_t> cgroup_room, std::uint64_t budget,
                              std::uint64_t swapped);

}  // namespace gpufrac::reclaim
