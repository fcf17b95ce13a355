#include "core/spec_scan.hpp"

#include <array>

namespace gpufrac {

bool may_name_gpufrac(std::string_view text) {
  constexpr std::array<std::string_view, 6> kNeedles = {"gpufrac.io",       "gpu-fraction", "gpu-memory",
                                                        "clearml-injector", "cdi.k8s.io",   "\\u"};
  for (auto needle : kNeedles)
    if (text.find(needle) != std::string_view::npos) return true;
  constexpr std::string_view kVar = "GPUFRAC_", kConfig = "CONFIG=";
  for (std::size_t at = text.find(kVar); at != std::string_view::npos; at = text.find(kVar, at + 1))
    if (text.substr(at + kVar.size(), kConfig.size()) != kConfig) return true;
  return false;
}

}  // namespace gpufrac
