// Loading a machine file named by GPUFRAC_FAKE_NVML_MACHINE (not in the driver kit's copy, which
// carries its machine embedded and links no YAML parser: fake_state_kit.cpp).
#include "fake_state.hpp"

namespace gpufrac::fake_nvml {

Result<std::unique_ptr<State>> load_state(const std::string& machine_file) {
  auto machine = load_simulated_machine(machine_file);
  if (!machine) return std::unexpected(machine.error());
  return state_of(*machine);
}

}  // namespace gpufrac::fake_nvml
