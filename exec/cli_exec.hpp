// Running a `gpufrac` helper from a static front-end (gpufrac-hook, gpufrac-runtime), which must
// never load NVML: `<cli.path> <verb> ...` (dynamic MIG's `mig provision`, exec/mig_exec.hpp; the
// driver's memory limits' `driver-limit set|clear`, exec/driver_limit_exec.hpp) is executed with a
// clean, explicit environment (PATH, GPUFRAC_CONFIG naming the config file in use, and the
// GPUFRAC_FAKE_NVML_* and GPUFRAC_FAULT variables of the caller, which only tests set) and no
// shell. Its stdout is its answer; on failure its "gpufrac: ..." line becomes the error, user or
// internal as its exit status (1 or 2) says.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac {

// The environment run_cli gives the helper (for tests).
std::vector<std::string> cli_env(const Config& cfg, char** environ_in);

// Runs argv (argv[0] = cfg.cli_path) and returns its stdout (bounded to 1 MiB).
Result<std::string> run_cli(const Config& cfg, std::vector<std::string> argv);

}  // namespace gpufrac
