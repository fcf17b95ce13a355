// What an SM share's container gets (docs/architecture.md "SM sharing"): its GPU's MPS pipe
// directory inside gpufrac's directory, the server's shm directory over /dev/shm (never the host's
// IPC), and the MPS client environment. Pure, like the rest of the planner.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/plan/edits.hpp"
#include "core/plan/grant.hpp"

namespace gpufrac {

// <state-dir>/mps/<GPU uuid>: the GPU's MPS daemon directory (pipe/, shm/, log/, daemon.json).
std::string mps_dir(const Config& cfg, const std::string& gpu_uuid);
std::string mps_pipe_dir(const Config& cfg, const std::string& gpu_uuid);
std::string mps_shm_dir(const Config& cfg, const std::string& gpu_uuid);
std::string mps_log_dir(const Config& cfg, const std::string& gpu_uuid);
// <state-dir>/mps-<GPU uuid>.lock: one change of a GPU's MPS daemon at a time (taken before the
// ledger's lock, never under it).
std::string mps_lock_path(const Config& cfg, const std::string& gpu_uuid);

// The SM share among the grants (at most one: it is its container's only GPU), or null.
const Grant* sm_grant_of(const std::vector<Grant>& grants);

// The pipe directory at GPUFRAC_CONTAINER_MPS_PIPE (read-write) and the shm directory at /dev/shm
// (read-write), both nosuid, nodev, noexec; none without an SM share. gpufrac-hook mounts them with
// gpufrac's directory in every front-end (a spec cannot: they exist only once the daemon runs).
std::vector<EditMount> plan_mps_mounts(const std::vector<Grant>& grants, const Config& cfg);
// True for a mount plan_mps_mounts makes.
bool is_mps_mount(const EditMount& m, const Config& cfg);

// CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (the share's percent) and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (<GPU uuid>=<MiB>M: its memory); none without an SM share.
std::vector<std::string> plan_mps_env(const std::vector<Grant>& grants);

}  // namespace gpufrac
