#include "engine-config/diff.hpp"

#include <vector>

#include "core/text.hpp"

namespace gpufrac::engine_config {

namespace {

constexpr std::size_t kContext = 3;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

// The edit script from a longest common subsequence: ' ' keep, '-' remove, '+' add.
std::vector<std::pair<char, std::string>> edit_script(const std::vector<std::string>& a,
                                                      const std::vector<std::string>& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> lcs(n + 1, std::vector<std::size_t>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<std::pair<char, std::string>> out;
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      out.emplace_back(' ', a[i++]);
      ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out.emplace_back('-', a[i++]);  // removals first, as diff -u prints them
    } else {
      out.emplace_back('+', b[j++]);
    }
  }
  return out;
}

std::string range(std::size_t start, std::size_t count) {
  // diff -u: an empty range is written as the line before it, ",0".
  return count == 1 ? text::cat(start) : text::cat(count == 0 ? start - 1 : start, ",", count);
}

}  // namespace

std::string unified_diff(const std::string& path, const std::optional<std::string>& before, const std::string& after) {
  if (before && *before == after) return "";
  const auto script = edit_script(lines_of(before.value_or("")), lines_of(after));
  std::string out = text::cat("--- ", before ? path : "/dev/null", "\n+++ ", path, "\n");
  std::size_t k = 0;
  while (k < script.size()) {
    if (script[k].first == ' ') {
      ++k;
      continue;
    }
    // A hunk: from kContext lines before this change to kContext lines after the last change that
    // is at most 2 * kContext unchanged lines away.
    std::size_t first = k >= kContext ? k - kContext : 0, last = k;
    for (std::size_t gap = 0, x = k; x < script.size(); ++x) {
      gap = script[x].first == ' ' ? gap + 1 : 0;
      if (script[x].first != ' ') last = x;
      if (gap > 2 * kContext) break;
    }
    const std::size_t end = std::min(script.size(), last + 1 + kContext);
    std::size_t a0 = 1, b0 = 1;
    for (std::size_t x = 0; x < first; ++x) {
      if (script[x].first != '+') ++a0;
      if (script[x].first != '-') ++b0;
    }
    std::size_t na = 0, nb = 0;
    std::string body;
    for (std::size_t x = first; x < end; ++x) {
      if (script[x].first != '+') ++na;
      if (script[x].first != '-') ++nb;
      body += text::cat(script[x].first, script[x].second, "\n");
    }
    out += text::cat("@@ -", range(a0, na), " +", range(b0, nb), " @@\n", body);
    k = end;
  }
  return out;
}

}  // namespace gpufrac::engine_config
