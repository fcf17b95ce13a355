// The driver kit's copy of the fake reads only the machine embedded in it (fake_embedded.cpp).
#include "fake_state.hpp"

namespace gpufrac::fake_nvml {

Result<std::unique_ptr<State>> load_state(const std::string& machine_file) {
  return internal_error("GPUFRAC_FAKE_NVML_MACHINE=" + machine_file +
                        ": this copy of the fake (a simulated driver tree's) reads only the machine embedded in it");
}

}  // namespace gpufrac::fake_nvml
