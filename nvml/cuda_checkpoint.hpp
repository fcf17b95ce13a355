// The CUDA driver's checkpoint API (CUDA 12.8 / driver r570+), driven from the host on another
// process by its pid: lock (block its CUDA calls once its submitted work is done), checkpoint (its
// device memory moved into its own host memory, the GPU released), restore (the memory back at the
// same addresses; refused when the GPU lacks it), unlock. libcuda.so.1 is dlopened; every CUresult
// becomes a one-line error naming the call, the pid and the state the call needs
// (docs/architecture.md "Swap"; shared/reference gpu-memory-swap.md §1).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac::nvml {

// CUprocessState: RUNNING=0, LOCKED=1, CHECKPOINTED=2, FAILED=3.
enum class ProcessState { running = 0, locked = 1, checkpointed = 2, failed = 3 };
// "RUNNING", "LOCKED", "CHECKPOINTED", "FAILED".
std::string_view state_name(ProcessState state);

class CheckpointDriver {
 public:
  // dlopen(path) (a bare name goes through the loader's search path), the checkpoint functions and
  // cuInit(0). A driver without them (before r570) is a user error that says so: swap then falls
  // back to kill.
  static Result<CheckpointDriver> open(const std::string& path = "libcuda.so.1");

  // The process's state; a pid without CUDA is an error ("pid N has no CUDA state").
  Result<ProcessState> state(int pid) const;
  // RUNNING -> LOCKED. timeout 0 waits as long as the process's submitted work runs; at the timeout
  // the process stays RUNNING and the error says so.
  Result<> lock(int pid, std::chrono::milliseconds timeout) const;
  // LOCKED -> CHECKPOINTED: the process's device memory goes to its host memory.
  Result<> checkpoint(int pid) const;
  // CHECKPOINTED -> LOCKED: its memory back on the same GPUs; refused (still CHECKPOINTED) when the
  // GPU lacks the memory.
  Result<> restore(int pid) const;
  // LOCKED -> RUNNING.
  Result<> unlock(int pid) const;
  // The driver's checkpoint/restore thread inside the process (it must be left to run).
  Result<int> restore_thread(int pid) const;

  const std::string& path() const { return path_; }

  struct Api;  // the resolved functions (cuda_checkpoint.cpp)

 private:
  struct Closer {
    void operator()(void* handle) const;
  };
  std::unique_ptr<void, Closer> handle_;
  std::shared_ptr<const Api> api_;
  std::string path_;
};

}  // namespace gpufrac::nvml
