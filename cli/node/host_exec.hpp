// Running a program of the host: under a host root other than "/", through `chroot <root>` (the
// node DaemonSet mounts the host's / at --host-root), so it sees the host's files, systemd's socket
// under the host's /run included. No shell; stdio inherited.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::cli::node {

// The argv as run: {"chroot", root, argv...} when root is not "/".
std::vector<std::string> host_argv(const std::string& root, std::vector<std::string> argv);
// Runs it and waits: its exit status (0..255), 128+N when killed by signal N.
Result<int> run_on_host(const std::string& root, const std::vector<std::string>& argv, bool quiet = false);
// Starts it without waiting (its process id).
Result<pid_t> start_on_host(const std::string& root, const std::vector<std::string>& argv);

}  // namespace gpufrac::cli::node
