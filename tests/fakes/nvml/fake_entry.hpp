// What every exported NVML function of the fake shares: the process-wide state behind one mutex,
// initialised by nvmlInit* (reference counted, as in NVML) and dropped by the last nvmlShutdown.
// No exception crosses the C ABI: with_state turns one into NVML_ERROR_UNKNOWN.
#pragma once

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "fake_mig_file.hpp"
#include "fake_state.hpp"

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpufrac::fake_nvml {

struct Global {
  std::mutex mutex;
  std::unique_ptr<State> state;  // null while not initialised
  unsigned int refs = 0;         // nvmlInit calls not yet matched by nvmlShutdown
};
Global& global();

// A state file that cannot be read or written: one line on stderr, NVML_ERROR_UNKNOWN.
inline nvmlReturn_t file_failure(const Error& e) {
  std::fprintf(stderr, "fake libnvidia-ml.so.1: %s\n", e.message.c_str());
  return NVML_ERROR_UNKNOWN;
}

// Runs f(State&) under the lock, after reloading a changed state file; NVML_ERROR_UNINITIALIZED
// before nvmlInit.
template <class F>
nvmlReturn_t with_state(F&& f) noexcept {
  try {
    std::lock_guard lock(global().mutex);
    if (!global().state) return NVML_ERROR_UNINITIALIZED;
    if (auto r = refresh_from_file(*global().state); !r) return file_failure(r.error());
    return f(*global().state);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// Runs f(State&), which changes the MIG state, under the state file's lock too: reload, change,
// and write the file back when f succeeds.
template <class F>
nvmlReturn_t with_state_change(F&& f) noexcept {
  try {
    std::lock_guard lock(global().mutex);
    if (!global().state) return NVML_ERROR_UNINITIALIZED;
    State& s = *global().state;
    auto file_lock = StateFileLock::acquire(s);
    if (!file_lock) return file_failure(file_lock.error());
    if (auto r = refresh_from_file(s); !r) return file_failure(r.error());
    nvmlReturn_t rc = f(s);
    if (rc == NVML_SUCCESS)
      if (auto r = save_to_file(s); !r) return file_failure(r.error());
    return rc;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// A string out-parameter with NVML's rules: INSUFFICIENT_SIZE unless it fits with its NUL.
inline nvmlReturn_t copy_string(const std::string& s, char* out, unsigned int length) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < s.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

}  // namespace gpufrac::fake_nvml

namespace gpufrac::fake_nvml {

// f(nvmlDevice_st&) for a live GPU or MIG device handle; INVALID_ARGUMENT for anything else.
template <class F>
nvmlReturn_t with_device(nvmlDevice_t device, F&& f) noexcept {
  return with_state([&](State& s) -> nvmlReturn_t {
    nvmlDevice_st* d = find_device(s, device);
    return d ? f(*d) : NVML_ERROR_INVALID_ARGUMENT;
  });
}

// f(PhysicalGpu&) for a GPU handle; NOT_SUPPORTED on a MIG device handle.
template <class F>
nvmlReturn_t with_gpu(nvmlDevice_t device, F&& f) noexcept {
  return with_device(device,
                     [&](nvmlDevice_st& d) -> nvmlReturn_t { return d.mig ? NVML_ERROR_NOT_SUPPORTED : f(*d.gpu); });
}

}  // namespace gpufrac::fake_nvml
