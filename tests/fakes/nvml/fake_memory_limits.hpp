// The fake driver's per-cgroup device-memory limits (nvmlDeviceSetMemoryLimits_v1, r615): what it
// keeps and where, shared with the fake libcuda.so.1, which enforces them (tests/fakes/cuda/drvlimit.c).
//
// - A nameSpace is the full path of a cgroup v2 directory under the cgroup root
//   (GPUFRAC_FAKE_NVML_CGROUP_ROOT, else /sys/fs/cgroup); the cgroup it names is the rest of the path
//   ("/a/b" for <root>/a/b, "/" for the root), as a process's /proc/<pid>/cgroup "0::" line names it.
//   A path that is not an existing directory there is NVML_ERROR_OPERATING_SYSTEM.
// - With GPUFRAC_FAKE_NVML_STATE=<file>, the limits live in "<file>.limits" (one line per limit:
//   "<GPU uuid> <soft> <hard> <cgroup>"), written atomically under flock(<file>.lock), so every
//   process sees them; without it, in this process only. A limit whose cgroup directory was removed
//   stays (as the ancestors' raised dmem.min does on a real node) until it is cleared.
// - Usage: each process of a limited cgroup that allocates through the fake libcuda keeps
//   "<file>.usage/<pid>" ("start <starttime>", "cgroup <cgroup>", then "used <uuid> <bytes>" lines);
//   currentUsed sums the live processes' files (pid and start time checked in /proc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "fake_state.hpp"

namespace gpufrac::fake_nvml {

inline constexpr const char* kCgroupRootEnv = "GPUFRAC_FAKE_NVML_CGROUP_ROOT";

// The cgroup a nameSpace names, or nullopt when it is not an existing directory under the root.
std::optional<std::string> cgroup_of_namespace(const char* name_space);

// The limits now (the limits file when the state has a file, else the process's own list).
Result<std::vector<MemoryLimit>> load_memory_limits(const State& state);
// Replaces them (call with the state file's lock held).
Result<> save_memory_limits(State& state, const std::vector<MemoryLimit>& limits);
// Bytes the live processes of `cgroup` hold on the GPU (0 without a state file).
std::uint64_t cgroup_used(const State& state, const std::string& cgroup, const std::string& gpu_uuid);

// The limit of the calling process's own cgroup (its /proc/self/cgroup "0::" line) on the GPU:
// nvmlDeviceGetMemoryInfo_v2 called within a partition reports it (total = hard).
std::optional<MemoryLimit> own_limit(const State& state, const std::string& gpu_uuid);

// GPUFRAC_FAKE_NVML_FAIL names `function` ("name" fails with NVML_ERROR_UNKNOWN, "name:<code>" with
// that code): the code, else NVML_SUCCESS.
nvmlReturn_t injected_code(const char* function);

}  // namespace gpufrac::fake_nvml
