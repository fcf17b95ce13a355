// Placeholder until the dlopen backend lands (issue 2, item 2): reports that real NVML discovery is
// not available in this build. Replaced by nvml_backend.cpp + nvml_api.hpp.
#include "nvml/nvml_backend.hpp"

namespace gpufrac {

Result<Inventory> discover_nvml(const std::string& library) {
  return internal_error("NVIDIA driver library " + library + " was not found; use --machine FILE for a simulated machine");
}

}  // namespace gpufrac
