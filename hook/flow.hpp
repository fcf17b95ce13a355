// The hook's lifecycle: prestart/createRuntime books a GPU share and applies it, poststop releases.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac::hook {

enum class Stage { prestart, create_runtime, poststop };

struct HookArgs {
  Stage stage = Stage::create_runtime;
  std::string config_path;  // --config (else $GPUFRAC_CONFIG, else /etc/gpufrac/config.yaml)
  std::string cdi_device;   // --cdi-device NAME: booked for a CDI device instead of annotations
  bool attach = false;      // --attach: the runtime wrapper booked it; mount gpufrac's directory, record the pid
  std::string ld_cache;     // --ld-cache DIRS: rebuild the loader cache for the driver's libraries
  std::string instance;     // --instance ID: the wrapper's instance of this container (else from its pid)
  std::string claim;        // --claim UID: a container of a DRA claim (booked by gpufrac-dra): the
                            // host-PID policy and gpufrac's directory
  // --driver-limit: with --attach or --claim, also set the driver's memory limits of the bookings.
  bool driver_limit = false;
};

inline constexpr const char* kHookUsage =
    "usage: gpufrac-hook prestart|createRuntime|poststop [--config FILE] [--cdi-device NAME] [--attach] "
    "[--ld-cache DIRS] [--instance ID] [--claim UID] [--driver-limit]";
// `gpufrac-hook --help`: the usage and what each part means.
std::string hook_help();

// gpufrac-hook <prestart|createRuntime|poststop> [--config FILE] [--cdi-device NAME] [--attach]
// [--ld-cache DIRS] [--instance ID] [--claim UID] [--driver-limit]
Result<HookArgs> parse_hook_args(int argc, const char* const* argv);

// Runs one invocation on the OCI state read from stdin; returns the exit code. Errors are printed as
// one "gpufrac-hook: ..." line on stderr (runtimes show it to the user). poststop always returns 0.
int run_hook(const HookArgs& args, std::string_view state_json);

}  // namespace gpufrac::hook
