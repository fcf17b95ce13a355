// Shared by the CDI unit tests: a shipped simulated machine with device nodes attached from its own
// majors and capability minors (never from this host's /proc), and the golden config.
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac::test {

inline std::string source_path(const std::string& relative) {
  return std::string(GPUFRAC_SOURCE_DIR) + "/" + relative;
}

// nvml/machines/<file> with device nodes as a host running that machine would list them.
Inventory machine_inventory(const std::string& file);
// tests/fixtures/cdi/config.yaml, loaded as /etc/gpufrac/config.yaml.
Config golden_config();

}  // namespace gpufrac::test
