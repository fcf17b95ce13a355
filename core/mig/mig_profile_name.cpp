#include "core/mig/mig_profile_name.hpp"

#include <optional>
#include <vector>

#include "core/text.hpp"

namespace gpufrac {

namespace {

// A small positive decimal without leading zeros, at most max_digits long; advances s.
std::optional<std::uint32_t> take_number(std::string_view& s, std::size_t max_digits) {
  std::size_t n = 0;
  while (n < s.size() && n <= max_digits && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || n > max_digits || s[0] == '0') return std::nullopt;
  auto v = text::parse_u64(s.substr(0, n));
  s.remove_prefix(n);
  return static_cast<std::uint32_t>(*v);
}

bool take(std::string_view& s, std::string_view token) {
  if (!s.starts_with(token)) return false;
  s.remove_prefix(token.size());
  return true;
}

// "+me,gfx" / "-me": one sign, known attributes, no repeats.
bool valid_attributes(std::string_view s) {
  if (s.empty()) return true;
  if (s[0] != '+' && s[0] != '-') return false;
  std::vector<std::string> seen;
  for (const auto& attr : text::split(s.substr(1), ',')) {
    if (attr != "me" && attr != "me.all" && attr != "gfx") return false;
    for (const auto& prior : seen)
      if (prior == attr) return false;
    seen.push_back(attr);
  }
  return true;
}

}  // namespace

Result<std::string> canonical_mig_profile(std::string_view text) {
  auto bad = [&] { return user_error(text::quote(text) + " is not a MIG profile; use " + kMigProfileForm); };
  if (text.empty() || text.size() > 32) return bad();
  std::string_view s = text;
  auto first = take_number(s, 1);
  if (!first) return bad();
  std::uint32_t compute = *first;
  std::uint32_t slices = *first;
  if (take(s, "c.")) {
    auto g = take_number(s, 1);
    if (!g) return bad();
    slices = *g;
  }
  if (!take(s, "g.")) return bad();
  if (slices > 8 || compute > slices) return bad();
  auto gb = take_number(s, 4);
  if (!gb || !take(s, "gb")) return bad();
  if (!valid_attributes(s)) return bad();
  std::string out = compute == slices ? "" : text::cat(compute, "c.");
  return out + text::cat(slices, "g.", *gb, "gb") + std::string(s);
}

std::string canonical_mig_profile_or_same(std::string_view name) {
  auto c = canonical_mig_profile(name);
  return c ? *c : std::string(name);
}

}  // namespace gpufrac
