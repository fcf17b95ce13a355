#include "core/spec/spec_scan.hpp"

#include <algorithm>
#include <array>

namespace gpufrac {

namespace {

constexpr std::array<std::string_view, 7> kNeedles = {
    "gpufrac.io", "gpu-fraction", "gpu-memory", "clearml-injector", "cdi.k8s.io", "\\u", "NVIDIA_GPU_MEMORY_"};
constexpr std::string_view kVar = "GPUFRAC_", kConfig = "CONFIG=";

// How far back from the end of a piece a name can start and still be unfinished: the longest
// needle, or "GPUFRAC_CONFIG=", less one byte.
constexpr std::size_t kCarry = [] {
  std::size_t longest = kVar.size() + kConfig.size();
  for (auto needle : kNeedles) longest = std::max(longest, needle.size());
  return longest - 1;
}();

// `more`: text follows this window. A "GPUFRAC_" with fewer than 7 bytes after it cannot be told
// from "GPUFRAC_CONFIG=" yet; it lies in the last kCarry bytes, which the next window starts with.
bool names(std::string_view text, bool more) {
  for (auto needle : kNeedles)
    if (text.find(needle) != std::string_view::npos) return true;
  for (std::size_t at = text.find(kVar); at != std::string_view::npos; at = text.find(kVar, at + 1)) {
    const std::string_view rest = text.substr(at + kVar.size());
    if (more && rest.size() < kConfig.size()) break;  // every later one is closer to the end
    if (rest.substr(0, kConfig.size()) != kConfig) return true;
  }
  return false;
}

}  // namespace

bool may_name_gpufrac(std::string_view text) {
  return names(text, false);
}

bool SpecScanner::feed(std::string_view piece) {
  if (named_ || piece.empty()) return named_;
  window_.append(piece);
  named_ = names(window_, true);
  if (named_) {
    window_.clear();
    window_.shrink_to_fit();
  } else if (window_.size() > kCarry) {
    window_.erase(0, window_.size() - kCarry);
  }
  return named_;
}

bool SpecScanner::named() const {
  return named_ || names(window_, false);
}

}  // namespace gpufrac
