// Small string helpers: concatenation without iostreams, byte and number formatting, and the
// helpers every parser uses (trim-free strict checks; we never trim untrusted input).
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufrac::text {

namespace detail {
inline void append(std::string& out, std::string_view s) {
  out.append(s);
}
inline void append(std::string& out, const char* s) {
  out.append(s);
}
inline void append(std::string& out, const std::string& s) {
  out.append(s);
}
inline void append(std::string& out, char c) {
  out.push_back(c);
}
inline void append(std::string& out, bool b) {
  out.append(b ? "true" : "false");
}
template <std::integral T>
requires(!std::same_as<T, char> && !std::same_as<T, bool>) void append(std::string& out, T v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}
void append(std::string& out, double v);
}  // namespace detail

// cat("GPU ", 3, " has ", 1.5, " GiB") -> "GPU 3 has 1.5 GiB"
template <class... Args>
std::string cat(const Args&... args) {
  std::string out;
  (detail::append(out, args), ...);
  return out;
}

// cat's pieces appended to `out`, with no temporary string (writers on hot paths).
template <class... Args>
void append_to(std::string& out, const Args&... args) {
  (detail::append(out, args), ...);
}

// "40.0 GiB", "512.0 MiB", "100 B": one decimal, binary units. Used in every human message.
std::string format_bytes(std::uint64_t bytes);
// Fixed decimals without locale: format_fixed(0.25, 2) == "0.25".
std::string format_fixed(double value, int decimals);
// A file mode in octal as ls and chmod show it: 0644, 4755.
std::string format_mode(unsigned mode);
// FNV-1a, 64 bits, as 16 lowercase hex digits: a checksum or a short stable name, not a secret.
std::string fnv1a64_hex(std::string_view data);
// Quotes untrusted text for a one-line message: printable ASCII kept, others as \xNN, cut at max.
std::string quote(std::string_view untrusted, std::size_t max = 64);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::vector<std::string> split(std::string_view s, char sep);
bool starts_with(std::string_view s, std::string_view prefix);
// Strict unsigned decimal: digits only, no sign, no spaces, no overflow.
std::optional<std::uint64_t> parse_u64(std::string_view s);
std::optional<std::int64_t> parse_i64(std::string_view s);

}  // namespace gpufrac::text
