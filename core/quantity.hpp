// Strict parsers for the two quantities users write: GPU fractions and memory amounts. Shared by
// annotations, CDI device names and the config file, so every front-end accepts the same forms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac {

// A fraction of one GPU in parts per million: exact, so 0.125 of a GPU is the same number of bytes
// everywhere. 1'000'000 means a whole GPU.
using Ppm = std::uint32_t;
inline constexpr Ppm kWholeGpuPpm = 1'000'000;

// Byte sums never wrap: a ledger whose entries add up past 2^64 reads as full, not as empty.
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? UINT64_MAX : out;
}

// Accepted form: "0.<1-6 digits>", "1", "1.<1-6 zeros>", with 0 < value <= 1 ("0.25", "1", "0.125").
// The message names the form only; callers prefix the field ("gpufrac.io/fraction: ...").
Result<Ppm> parse_fraction(std::string_view text);
// Canonical text of a fraction: 250000 -> "0.25", 1000000 -> "1", 125000 -> "0.125".
std::string format_fraction(Ppm ppm);
// Bytes of a fraction of total memory, rounded down to a whole MiB (what a driver can hand out).
std::uint64_t fraction_bytes(std::uint64_t total_bytes, Ppm ppm);

// Accepted form: a positive integer of MiB ("4096"), or a number with a Kubernetes suffix
// Ki Mi Gi Ti (binary) or k M G T (decimal): "4Gi", "1.5Gi", "4G" (= 4e9 bytes). At most 1 PiB.
Result<std::uint64_t> parse_memory(std::string_view text);

// The canonical text of an amount: the largest unit that divides it exactly, binary first
// (4Gi, 4G, 1536Mi, 1500M, 64Ki, 5k); nullopt for 0 or an amount no unit divides.
std::optional<std::string> format_memory(std::uint64_t bytes);

inline constexpr const char* kFractionForm = "a decimal 0 < f <= 1 with at most 6 decimals, e.g. 0.25";
inline constexpr const char* kMemoryForm =
    "an integer of MiB or a number with suffix Ki, Mi, Gi, Ti, k, M, G or T, e.g. 4Gi";

}  // namespace gpufrac
