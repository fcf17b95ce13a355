// Running a program of the host, given as an fd, without any privilege: as nobody (uid and gid
// 65534, no supplementary groups), no capabilities, no_new_privs, an empty environment, stdin
// closed and no other fd of the caller. Started the way posix_spawn starts a program (CLONE_VM |
// CLONE_VFORK): no copy of the caller's page tables, the caller waits until the exec.
#pragma once

#include <string>

#include "core/error.hpp"

namespace gpufrac::hook {

inline constexpr unsigned kNobody = 65534;

struct ProgramRun {
  int status = 0;      // as waitpid reports it
  std::string output;  // stdout and stderr together, the first 4 KiB
};

// argv ends with nullptr; the program is run by execveat(program_fd, "", AT_EMPTY_PATH).
Result<ProgramRun> run_as_nobody(int program_fd, const char* const* argv);

}  // namespace gpufrac::hook
