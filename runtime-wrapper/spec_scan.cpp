#include "runtime-wrapper/spec_scan.hpp"

#include <array>

namespace gpufrac::wrapper {

bool may_request_gpu(std::string_view text) {
  constexpr std::array<std::string_view, 7> kNeedles = {"gpufrac.io", "gpu-fraction", "gpu-memory", "clearml-injector",
                                                        "cdi.k8s.io", "GPUFRAC_",     "\\u"};
  for (auto needle : kNeedles)
    if (text.find(needle) != std::string_view::npos) return true;
  return false;
}

}  // namespace gpufrac::wrapper
