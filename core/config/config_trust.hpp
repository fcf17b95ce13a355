// A config decides which host file is bind-mounted into containers (shim.path) and which program
// runs as root (cli.path), so a process running as root reads only a config that root alone can
// change, as sudo and sshd do: the file and every directory above it owned by root and not
// writable by group or others (a world-writable directory is accepted only with the sticky bit,
// like /tmp, where nobody can replace another's entry).
#pragma once

#include <string>

#include "core/error.hpp"

namespace gpufrac {

// Checks the resolved path of `path`; a one-line error names the file or directory, its owner and
// its mode. Does nothing when the process is not root.
Result<> check_config_trust(const std::string& path);

}  // namespace gpufrac
