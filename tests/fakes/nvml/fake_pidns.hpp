// Processes of other PID namespaces in the fake libcuda's usage directory (tests/fakes/cuda/procname.h):
// the fake libnvidia-ml.so.1 reports host pids, as the kernel driver knows them, so it translates a
// usage entry "<pid>@<namespace inode>" to the host pid of that process; "<pid>" is a process of the
// host's namespace, which the first process that attaches the state file records in "<file>.pidns".
#pragma once

#include <optional>
#include <string>

namespace gpufrac::fake_nvml {

// Records this process's PID namespace as the host's beside the state file, once (the first wins).
void record_host_pidns(const std::string& state_file);

// The host pid (as text) of the process a usage entry names; nullopt for a name that is no usage
// entry (".tmp", ".live") or a process that is gone.
std::optional<std::string> host_pid_of(const std::string& entry);

}  // namespace gpufrac::fake_nvml
