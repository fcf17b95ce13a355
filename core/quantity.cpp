#include "core/quantity.hpp"

#include <array>

#include "core/text.hpp"

namespace gpufrac {

namespace {

bool all_digits(std::string_view s) {
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

std::unexpected<Error> bad_fraction(std::string_view text) {
  return user_error(text::quote(text) + " is not a fraction; use " + kFractionForm);
}

std::unexpected<Error> bad_memory(std::string_view text, std::string_view why = "is not a memory quantity") {
  return user_error(text::quote(text) + " " + std::string(why) + "; use " + kMemoryForm);
}

struct Suffix {
  std::string_view name;
  std::uint64_t multiplier;
};
constexpr std::array<Suffix, 8> kSuffixes{{{"Ki", 1ull << 10},
                                           {"Mi", 1ull << 20},
                                           {"Gi", 1ull << 30},
                                           {"Ti", 1ull << 40},
                                           {"k", 1000ull},
                                           {"M", 1000ull * 1000},
                                           {"G", 1000ull * 1000 * 1000},
                                           {"T", 1000ull * 1000 * 1000 * 1000}}};
constexpr std::uint64_t kMaxMemory = 1ull << 50;

}  // namespace

Result<Ppm> parse_fraction(std::string_view text) {
  if (text.empty() || text.size() > 8) return bad_fraction(text);
  auto dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view decimals = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (whole != "0" && whole != "1") return bad_fraction(text);
  if (dot != std::string_view::npos && (decimals.empty() || decimals.size() > 6 || !all_digits(decimals)))
    return bad_fraction(text);
  Ppm ppm = whole == "1" ? kWholeGpuPpm : 0;
  Ppm scale = 100000;
  for (char c : decimals) {
    ppm += static_cast<Ppm>(c - '0') * scale;
    scale /= 10;
  }
  if (ppm == 0 || ppm > kWholeGpuPpm) return user_error(text::quote(text) + " is out of range; use " + kFractionForm);
  return ppm;
}

std::string format_fraction(Ppm ppm) {
  if (ppm >= kWholeGpuPpm) return "1";
  std::string digits = text::cat(ppm);
  digits.insert(0, 6 - digits.size(), '0');
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return "0." + digits;
}

std::uint64_t fraction_bytes(std::uint64_t total_bytes, Ppm ppm) {
  const unsigned __int128 exact = static_cast<unsigned __int128>(total_bytes) * ppm / kWholeGpuPpm;
  const std::uint64_t mib = 1ull << 20;
  return static_cast<std::uint64_t>(exact) / mib * mib;
}

std::optional<std::string> format_memory(std::uint64_t bytes) {
  static constexpr std::array<std::pair<std::uint64_t, const char*>, 8> kUnits{{{1ull << 40, "Ti"},
                                                                                {1ull << 30, "Gi"},
                                                                                {1'000'000'000'000ull, "T"},
                                                                                {1'000'000'000ull, "G"},
                                                                                {1ull << 20, "Mi"},
                                                                                {1'000'000ull, "M"},
                                                                                {1ull << 10, "Ki"},
                                                                                {1000ull, "k"}}};
  if (bytes == 0) return std::nullopt;
  for (auto [unit, suffix] : kUnits)
    if (bytes % unit == 0) return text::cat(bytes / unit, suffix);
  return std::nullopt;
}

Result<std::uint64_t> parse_memory(std::string_view text) {
  if (text.empty() || text.size() > 32) return bad_memory(text);
  std::uint64_t multiplier = 1ull << 20;  // bare integer: MiB
  std::string_view number = text;
  bool has_suffix = false;
  for (const auto& s : kSuffixes) {
    if (text.size() > s.name.size() && text.ends_with(s.name)) {
      number = text.substr(0, text.size() - s.name.size());
      multiplier = s.multiplier;
      has_suffix = true;
      break;
    }
  }
  auto dot = number.find('.');
  std::string_view whole = number.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
  if (whole.empty() || !all_digits(whole) || (whole.size() > 1 && whole[0] == '0')) return bad_memory(text);
  if (dot != std::string_view::npos && (!has_suffix || frac.empty() || frac.size() > 9 || !all_digits(frac)))
    return bad_memory(text);
  auto w = text::parse_u64(whole);
  if (!w || *w > kMaxMemory) return bad_memory(text, "is too large");
  unsigned __int128 bytes = static_cast<unsigned __int128>(*w) * multiplier;
  unsigned __int128 scale = 1;
  for (std::size_t i = 0; i < frac.size(); ++i) scale *= 10;
  if (!frac.empty()) bytes += static_cast<unsigned __int128>(*text::parse_u64(frac)) * multiplier / scale;
  if (bytes == 0) return bad_memory(text, "is zero");
  if (bytes > kMaxMemory) return bad_memory(text, "is too large (at most 1 PiB)");
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace gpufrac
