// The fake driver's compute mode per GPU (nvmlDeviceSetComputeMode / GetComputeMode): what it keeps
// and where, shared with the fake libcuda.so.1 (tests/fakes/cuda/mps.c), which refuses a context to a
// process that is not an MPS client on a GPU in EXCLUSIVE_PROCESS mode held by another process.
//
// - With GPUFRAC_FAKE_NVML_STATE=<file>, the modes live in "<file>.compute-mode" (one line per GPU
//   whose mode is not DEFAULT: "<GPU uuid> <mode number>"), written atomically under the state
//   file's lock, so every process (and the fake libcuda in containers that see the file) reads
//   them; without it, in this process only. A GPU without a line is DEFAULT (0), as after a reboot.
// - Modes: 0 DEFAULT, 1 EXCLUSIVE_THREAD (deprecated, refused as on current drivers:
//   NOT_SUPPORTED), 2 PROHIBITED, 3 EXCLUSIVE_PROCESS. Set: root only (NO_PERMISSION), a MIG device
//   handle NOT_SUPPORTED, another value INVALID_ARGUMENT. GPUFRAC_FAKE_NVML_FAIL names either call
//   to make it fail.
#pragma once

#include <map>
#include <string>

#include "core/error.hpp"
#include "fake_state.hpp"

namespace gpufrac::fake_nvml {

Result<std::map<std::string, unsigned int>> load_compute_modes(const State& state);
// Replaces them (call with the state file's lock held); DEFAULT entries are left out.
Result<> save_compute_modes(State& state, const std::map<std::string, unsigned int>& modes);

}  // namespace gpufrac::fake_nvml
