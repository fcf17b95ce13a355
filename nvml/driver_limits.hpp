// The driver's per-cgroup device-memory limits through NVML (nvmlDeviceSetMemoryLimits_v1 and
// nvmlDeviceGetMemoryLimits_v1, r615+; docs/architecture.md "Driver-enforced memory limits"): the
// configured library opened and initialised for one session, GPUs found by UUID, every NVML error
// a one-line message naming the GPU, the cgroup, the call and what to do.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "nvml/nvml_library.hpp"

namespace gpufrac {

// What the driver holds for a cgroup on a GPU.
struct LimitReading {
  std::uint64_t soft = 0, hard = 0, used = 0;
};

class LimitDriver {
 public:
  // nvml.library, opened and initialised (the simulated backend has no driver: refused).
  static Result<LimitDriver> open(const Config& cfg);
  LimitDriver(LimitDriver&&) noexcept = default;
  LimitDriver& operator=(LimitDriver&&) noexcept = default;
  ~LimitDriver();

  // Both calls exported (an older driver: false, and set() says the call is absent).
  bool available() const { return lib_->has_memory_limits(); }
  // Sets soft and hard on the GPU for l.cgroup. Ok(false): the call is absent (not exported, or
  // NVML_ERROR_FUNCTION_NOT_FOUND); every other failure is an error.
  Result<bool> set(const std::string& gpu_uuid, const DriverLimit& l) const;
  // Clears it: soft to 0 first (hard kept), then hard to NVML_DEVICE_MEMORY_LIMIT_MAX.
  Result<> clear(const std::string& gpu_uuid, const DriverLimit& l) const;
  // nullopt where no limit is set (NOT_FOUND).
  Result<std::optional<LimitReading>> get(const std::string& gpu_uuid, const std::string& cgroup) const;

 private:
  explicit LimitDriver(std::unique_ptr<nvml::Library> lib) : lib_(std::move(lib)) {}
  Result<nvmlDevice_t> device(const std::string& gpu_uuid) const;
  Result<bool> call_set(nvmlDevice_t dev, const std::string& gpu_uuid, const DriverLimit& l, std::uint64_t soft,
                        std::uint64_t hard) const;
  std::unique_ptr<nvml::Library> lib_;
};

// The one line for a failed memory-limit call (for tests: every code the calls return).
Error limit_call_error(std::string_view call, const std::string& error_text, nvmlReturn_t code,
                       const std::string& gpu_uuid, const DriverLimit& l);

}  // namespace gpufrac
