#include "core/request/compute_share.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace gpufrac {

Result<std::uint32_t> parse_compute_percent(std::string_view text) {
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
  if (!digits || (text.size() > 1 && text[0] == '0'))
    return user_error(text::quote(text) + " is not a percent; use " + kComputeForm);
  const auto v = text.size() <= 3 ? text::parse_u64(text) : std::nullopt;
  if (!v || *v == 0 || *v > 100) return user_error(text::quote(text) + " is out of range; use " + kComputeForm);
  return static_cast<std::uint32_t>(*v) * kPpmPerPercent;
}

std::optional<ComputeMode> compute_mode_from(std::string_view text) {
  if (text == "fair") return ComputeMode::fair;
  if (text == "strict") return ComputeMode::strict;
  if (text == "sm") return ComputeMode::sm;
  return std::nullopt;
}

std::optional<ComputePriority> compute_priority_from(std::string_view text) {
  if (text == "normal") return ComputePriority::normal;
  if (text == "high") return ComputePriority::high;
  return std::nullopt;
}

std::string format_compute_percent(std::uint64_t ppm) {
  std::string out = text::cat(ppm / kPpmPerPercent);
  std::uint64_t rest = ppm % kPpmPerPercent;
  if (rest == 0) return out;
  std::string decimals = text::cat(rest + kPpmPerPercent).substr(1);  // four digits, leading zeros kept
  decimals.erase(decimals.find_last_not_of('0') + 1);
  return out + "." + decimals;
}

std::string format_compute(std::uint64_t ppm) {
  return format_compute_percent(ppm) + " %";
}

std::string booked_text(std::uint64_t bytes, std::uint32_t compute_ppm) {
  std::string out = text::format_bytes(bytes);
  return compute_ppm == 0 ? out : out + " and " + format_compute(compute_ppm) + " of its time";
}

std::uint32_t default_compute_ppm(std::uint64_t bytes, std::uint64_t capacity) {
  if (bytes == 0 || capacity == 0) return 0;
  const auto ppm = static_cast<unsigned __int128>(bytes) * kWholeGpuComputePpm / capacity;
  return static_cast<std::uint32_t>(std::clamp<unsigned __int128>(ppm, 1, kWholeGpuComputePpm));
}

}  // namespace gpufrac
