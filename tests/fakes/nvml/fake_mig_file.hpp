// The fake's MIG state in a file shared between processes (GPUFRAC_FAKE_NVML_STATE=<file>), so a
// provisioning process and the CLI see the same GPUs, as with a real driver. The file holds, per
// GPU, the MIG modes, the GPU instances with their compute instances and MIG device slots, and
// the UUID serial; it is created from the machine file on first use. Every call first reloads the
// file when it changed (compared by inode, size and mtime); every change runs under flock on
// "<file>.lock" as reload, change, atomic replace. Reloading keeps the handles of objects that
// still exist, as a driver does.
#pragma once

#include <string>

#include "core/error.hpp"
#include "fake_state.hpp"

namespace gpufrac::fake_nvml {

inline constexpr const char* kStateEnv = "GPUFRAC_FAKE_NVML_STATE";

// Holds the exclusive lock on the state file while alive (a no-op without a state file).
class StateFileLock {
 public:
  static Result<StateFileLock> acquire(const State& state);
  StateFileLock(StateFileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  StateFileLock(const StateFileLock&) = delete;
  StateFileLock& operator=(const StateFileLock&) = delete;
  ~StateFileLock();

 private:
  explicit StateFileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// At nvmlInit: adopts the file's MIG state when it exists, else writes the machine's.
Result<> attach_state_file(State& state, const std::string& path);
// Reloads the MIG state when the file changed since it was last read or written.
Result<> refresh_from_file(State& state);
// Writes the MIG state (call with the lock held).
Result<> save_to_file(State& state);

}  // namespace gpufrac::fake_nvml
