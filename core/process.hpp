// Process liveness by pid + start time, read from <proc-root>/<pid>/stat. A pid alone is not an
// identity: the kernel reuses pids, so a booking remembers its process's start time (field 22,
// clock ticks since boot) and a process with the same pid but another start time is a stranger.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac {

struct ProcStat {
  char state = '?';              // field 3: R, S, D, Z, X, ...
  std::uint64_t start_time = 0;  // field 22
};

// Parses the text of /proc/<pid>/stat. comm (field 2) may hold spaces and parentheses: the fields
// after it are found from the last ')'.
Result<ProcStat> parse_proc_stat(std::string_view content);

// The stat of a live pid; ENOENT/ESRCH (errno kept) when there is no such process.
Result<ProcStat> read_proc_stat(const std::string& proc_root, std::int64_t pid);

enum class Liveness {
  alive,    // same pid, same start time, not a zombie
  exited,   // no such process, or a zombie / dead task
  reused,   // the pid now belongs to another process
  unknown,  // could not tell (e.g. permission): treated as alive, a share is never freed on doubt
};
const char* to_string(Liveness l);

Liveness process_liveness(const std::string& proc_root, std::int64_t pid, std::uint64_t start_time);

}  // namespace gpufrac
