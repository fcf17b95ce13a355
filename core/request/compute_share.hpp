// Compute shares (docs/architecture.md "Compute share"): the percent users write, the text people
// read, and the default weight of a share that asks for no compute. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/plan/grant.hpp"

namespace gpufrac {

inline constexpr const char* kComputeForm = "an integer percent of the GPU's time from 1 to 100, e.g. 30";
inline constexpr const char* kComputeModeForm = "fair, strict or sm";
inline constexpr const char* kPriorityForm = "normal or high";
inline constexpr std::uint32_t kPpmPerPercent = 10'000;

// "30" -> 300'000 ppm: digits only (no sign, point, space or leading zero), 1 to 100. The message
// names the form only; callers prefix the key ("gpufrac.io/compute: ...").
Result<std::uint32_t> parse_compute_percent(std::string_view text);
// "fair" | "strict" | "sm", "normal" | "high": the words the limit file and the ledger use.
std::optional<ComputeMode> compute_mode_from(std::string_view text);
std::optional<ComputePriority> compute_priority_from(std::string_view text);

// A weight as people read it: 300'000 -> "30 %", 333'333 -> "33.3333 %", 0 -> "0 %" (exact: a
// ppm is at most four decimals of a percent).
std::string format_compute(std::uint64_t ppm);
// The same without the unit, as a request names it: 300'000 -> "30".
std::string format_compute_percent(std::uint64_t ppm);
// What a booking holds, for log lines: "9.9 GiB", or "9.9 GiB and 25 % of its time".
std::string booked_text(std::uint64_t bytes, std::uint32_t compute_ppm);

// The default weight of a share of `bytes` on a GPU that may promise `capacity` bytes (its total x
// overcommit): bytes x 10^6 / capacity, rounded down, at least 1. Shares whose memory fits on a GPU
// therefore always fit its time: the weights of bytes that sum to at most capacity sum to at most
// 10^6 (the "at least 1" aside, which matters only past 10^6 MiB of capacity).
std::uint32_t default_compute_ppm(std::uint64_t bytes, std::uint64_t capacity);

}  // namespace gpufrac
