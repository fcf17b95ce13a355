// Burstable memory requests (docs/architecture.md "Burstable memory"): a share books its request
// and may use up to a higher limit while the GPU has memory no request holds. The keys:
//   gpufrac.io/memory-limit (an amount, beside gpufrac.io/memory), gpufrac.io/fraction-limit (a
//   fraction, beside gpufrac.io/fraction), KAI-Scheduler's gpu-memory.limit (MiB) and
//   gpu-fraction.limit beside their request aliases, GPUFRAC_MEMORY_LIMIT / GPUFRAC_FRACTION_LIMIT;
//   gpufrac.io/on-limit: fail (default) or wait, with gpufrac.io/on-limit-timeout in seconds.
// Refused, one line naming the keys: two limit keys, a limit without a request, a limit of another
// kind than the request, a limit below the request, a limit beside mig-profile, several GPUs or a
// whole GPU, a timeout without on-limit: wait. A limit equal to the request is no limit. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

inline constexpr const char* kOnLimitForm = "fail or wait";
inline constexpr const char* kOnLimitTimeoutForm = "whole seconds from 1 to 3600, e.g. 5";
// gpufrac.io/on-limit: wait without a timeout waits this long.
inline constexpr std::uint32_t kDefaultWaitMs = 30'000;
inline constexpr std::uint32_t kMaxWaitS = 3600;

// The burst keys (own and, with `aliases`, the alias limit keys): none of them gives a size.
bool is_burst_key(std::string_view key);

// The first limit key the annotations hold (own keys first, then enabled aliases), or null.
const char* first_limit_key(const Annotations& annotations, bool aliases);

// The refusal of a limit key set without a request (`name`: the key or its variable).
std::unexpected<Error> limit_without_request(std::string_view name);

// The burst keys onto a request parsed from its size key (`size_key`, the key itself, not its
// variable; "" when compute or gpus gave the size): the limit, the on-limit policy and timeout.
Result<> apply_burst(Request& r, const Annotations& annotations, bool aliases, const KeyNames& names,
                     std::string_view size_key);

// " memory-limit=30Gi on-limit=wait on-limit-timeout=5" (empty without either), for describe().
std::string describe_burst(const Request& r);

// The form a burst key's value takes, for messages; empty for other keys.
std::string_view burst_form_of(std::string_view key);

}  // namespace gpufrac
