#include "cli/context.hpp"

#include <cstdio>

#include "core/fs.hpp"

namespace gpufrac::cli {

Result<Config> Context::load(const std::string& machine) const {
  auto cfg = select_config(config_path);
  if (!cfg) return cfg;
  if (!machine.empty()) {
    cfg->nvml.backend = NvmlBackend::simulated;
    cfg->nvml.machine = machine;
  }
  return cfg;
}

int Context::fail(const Error& e) {
  std::fprintf(stderr, "gpufrac: %s\n", e.message.c_str());
  exit_code = e.exit_code();
  return exit_code;
}

}  // namespace gpufrac::cli
