// Starting a GPU's MPS control daemon and knowing which process it is (docs/architecture.md "SM
// sharing"). The pid is never taken from a file: `nvidia-cuda-mps-control -d` runs under a starter
// process gpufrac forks, a child subreaper (PR_SET_CHILD_SUBREAPER), so the daemon it leaves behind
// becomes the starter's child. The pid the daemon writes in its (fresh) pipe directory is taken only
// once the kernel says it is the starter's live child (waitid WNOWAIT); its start time is read while
// it still is (it cannot have been reused), then the starter exits and the daemon is adopted by init.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"

namespace gpufrac {

struct MpsSpawned {
  std::int64_t pid = 0;
  std::uint64_t start_time = 0;  // /proc/<pid>/stat field 22
};

// In a child: fds 0-2 as given (one given closed stays closed), every other fd closed.
// Async-signal-safe.
bool only_stdio(int in, int out, int err);

// PATH, the daemon's CUDA variables (CUDA_VISIBLE_DEVICES, CUDA_MPS_PIPE_DIRECTORY,
// CUDA_MPS_LOG_DIRECTORY) and the caller's GPUFRAC_FAKE_* (set only by tests: the fake driver's state).
std::vector<std::string> mps_daemon_env(const Config& cfg, const std::string& gpu_uuid);
std::vector<char*> c_strings(std::vector<std::string>& v);

}  // namespace gpufrac
