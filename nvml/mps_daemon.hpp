// One GPU's MPS control daemon as gpufrac runs it (docs/architecture.md "SM sharing"): its lock,
// its record in the state directory, starting it detached and talking to it. nvml/mps_keeper.hpp
// decides when; this file only does.
//  - Lock: flock(<state-dir>/mps-<GPU uuid>.lock), one change of the GPU's daemon at a time (taken
//    before the ledger's lock, never under it).
//  - Record: <state-dir>/mps/<GPU uuid>/daemon.json, {"gpu", "state", "prior_compute_mode", "pid",
//    "pid_start", "time"}, written atomically before each step: "starting" (before the compute mode
//    is changed: prior_compute_mode is what to restore), "running" (pid and start time of the
//    daemon), "stopping". A daemon is trusted only while its pid has that start time (a reused pid
//    is never signalled), and it is told to quit through its own pipe directory, which no other
//    process answers on.
//  - Daemon: <driver's nvidia-cuda-mps-control> -d, with CUDA_VISIBLE_DEVICES=<GPU uuid>,
//    CUDA_MPS_PIPE_DIRECTORY=<mps dir>/pipe, CUDA_MPS_LOG_DIRECTORY=<mps dir>/log, RLIMIT_NOFILE
//    raised to 16384 (NVIDIA's advice for the server's shm segments), in a mount namespace of its own
//    where /dev/shm is <mps dir>/shm (so its servers' segments are there, for the containers that get
//    that directory, and never in the host's /dev/shm); stdin /dev/null, stdout and stderr appended
//    to <mps dir>/log/control.log, no other fd of the caller (all from 3 up closed before the exec).
//    pipe/ and shm/ are tmpfs mounted fresh at each start (nvml/mps_dirs.hpp); the pid recorded is
//    the kernel's (nvml/mps_spawn.hpp), never read from the pipe directory a container can write.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/inventory/inventory.hpp"
#include "nvml/mps_spawn.hpp"

namespace gpufrac {

class MpsGpuLock {
 public:
  static Result<MpsGpuLock> acquire(const Config& cfg, const std::string& gpu_uuid);

 private:
  explicit MpsGpuLock(fs::UniqueFd fd) : fd_(std::move(fd)) {}
  fs::UniqueFd fd_;
};

enum class MpsDaemonState { starting, running, stopping };
const char* to_string(MpsDaemonState s);

struct MpsDaemonRecord {
  std::string gpu_uuid;
  MpsDaemonState state = MpsDaemonState::starting;
  unsigned prior_compute_mode = 0;  // NVML_COMPUTEMODE_* to restore when the daemon goes
  std::int64_t pid = 0;             // the daemon, once running
  std::uint64_t pid_start = 0;
  std::int64_t time = 0;  // when the record was written
  bool operator==(const MpsDaemonRecord&) const = default;
};

std::string mps_record_path(const Config& cfg, const std::string& gpu_uuid);
Result<> write_mps_record(const Config& cfg, const MpsDaemonRecord& r);
Result<std::optional<MpsDaemonRecord>> read_mps_record(const Config& cfg, const std::string& gpu_uuid);
// The GPUs that have a record (for gc), by uuid.
std::vector<std::string> mps_recorded_gpus(const Config& cfg);
// Detaches the daemon's pipe and shm tmpfs, removes the record and the daemon's directories.
Result<> remove_mps_files(const Config& cfg, const std::string& gpu_uuid);

// The driver's nvidia-cuda-mps-control on the host, from the inventory (driver discovery).
Result<std::string> mps_control_path(const Inventory& inv);

// Starts the daemon for the GPU (as above), in fresh pipe and shm tmpfs (nvml/mps_dirs.hpp), and
// returns its pid and start time as the kernel gives them (nvml/mps_spawn.hpp: never a pid a file
// says alone); waits up to 10 s for it.
Result<MpsSpawned> spawn_mps_daemon(const Config& cfg, const std::string& control, const std::string& gpu_uuid);
// SIGKILL to the record's daemon through a pidfd, only when that process has the recorded start
// time and runs nvidia-cuda-mps-control; false when nothing was signalled.
bool kill_mps_daemon(const Config& cfg, const MpsDaemonRecord& r);
// Sends control commands to the GPU's daemon (the control binary without -d, commands on its stdin)
// and returns what it printed; an error when no daemon answers, or none within 10 s (the shell is
// killed: a hung daemon must not hold the GPU's lock).
Result<std::string> mps_command(const Config& cfg, const std::string& control, const std::string& gpu_uuid,
                                const std::string& commands);

}  // namespace gpufrac
