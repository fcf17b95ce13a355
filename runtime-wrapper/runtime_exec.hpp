// Finding and starting the low-level runtime. Only the runtimes named in the config are ever
// executed, by absolute path: a name is looked up in the absolute directories of PATH (a relative
// entry such as "." is skipped: the current directory is the bundle), an entry with a "/" must be
// an absolute path. gpufrac-runtime itself is skipped, so installing it under a runtime's name
// cannot loop.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::wrapper {

inline constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
};

// The first executable regular file among `runtimes` (config `runtimes:`), searching `path_env`
// (nullopt: PATH unset, kDefaultPath is used) and skipping the file `self` (this program).
Result<std::string> resolve_runtime(const std::vector<std::string>& runtimes,
                                    const std::optional<std::string>& path_env, const std::optional<FileId>& self);

// This program's file (/proc/self/exe), to skip it while resolving.
std::optional<FileId> self_file();

// Replaces this process with the runtime: argv[0] becomes the runtime's path, argv[1..] are passed
// unchanged, the environment too. Returns only on failure.
Error exec_runtime(const std::string& runtime, int argc, char** argv);

// After gpufrac booked and edited the spec: runs the runtime as a child (signals the wrapper gets
// are passed on) and returns its wait status, so a refused create can be undone.
Result<int> run_runtime(const std::string& runtime, int argc, char** argv);
// The exit code that reports a wait status as a shell does (128 + signal).
int exit_code_of(int wait_status);

}  // namespace gpufrac::wrapper
