// Composing with NVIDIA's container toolkit, whose createRuntime CDI hook sets the driver's
// per-cgroup memory limit from NVIDIA_GPU_MEMORY_LIMIT (hard) and NVIDIA_GPU_MEMORY_REQUEST (soft)
// in the container's environment: whole MiB, one value for every GPU. A container gpufrac gives
// shares to must never get two limits: gpufrac-runtime writes gpufrac's own values in their place
// (the container's env is its to edit); the hook, which cannot change the environment, refuses a
// container whose values disagree with gpufrac's. gpufrac's values are those of
// core/enforcement/enforcement.hpp (hard = the share's limit, its burst limit where it has one; soft
// = its guarantee, the request), in whole MiB: NVIDIA_GPU_MEMORY_REQUEST=8192 with
// NVIDIA_GPU_MEMORY_LIMIT=16384 as a request of its own gives back exactly those two values.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

inline constexpr const char* kNvidiaMemoryLimitEnv = "NVIDIA_GPU_MEMORY_LIMIT";
inline constexpr const char* kNvidiaMemoryRequestEnv = "NVIDIA_GPU_MEMORY_REQUEST";

// The NVIDIA variables `env` ("KEY=VALUE" entries) sets, rewritten to gpufrac's values for the
// container's shares ("KEY=VALUE", replacing the same keys); none when it sets neither or gpufrac
// books no share. Shares whose values differ between GPUs cannot be written as one: refused.
Result<std::vector<std::string>> nvidia_memory_env(const std::vector<std::string>& env,
                                                   const std::vector<LedgerEntry>& bookings, const Config& cfg);

// The hook's check: the variables `env` sets equal gpufrac's values, else a user error naming both.
Result<> check_nvidia_memory_env(const std::vector<std::string>& env, const std::vector<LedgerEntry>& bookings,
                                 const Config& cfg);

}  // namespace gpufrac
