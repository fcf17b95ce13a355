// gpufrac-runtime's view of a runc-compatible command line. The wrapper never rewrites argv: it
// only needs to know whether this is a create (create or run), where the bundle is, the container
// id, and the --log file where containerd looks for the runtime's error. Everything else is passed
// to the low-level runtime byte for byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::wrapper {

struct RuntimeArgs {
  std::string command;       // first argument after the global flags; "" when there is none
  bool creates = false;      // create or run: the spec may be edited
  std::string bundle;        // --bundle / -b; "" = the current directory
  std::string config_file;   // crun's create --config / -f (relative to the bundle); "" = config.json
  std::string container_id;  // first positional argument after the command
  std::string log_path;      // global --log
  std::string log_format;    // global --log-format (text or json)
};

// Parses the arguments after argv[0] the way runc (urfave/cli over Go's flag package) and crun
// (argp) do: global flags before the command, as --name, -name, --name=value or --name value;
// command flags anywhere after the command until "--". Never fails: what it does not recognise is
// left to the runtime, which reports it.
//
// Global flags with a value: log, log-format, log-level, root, criu, rootless, cgroup-manager;
// every other global flag is taken as a switch. Create/run flags with a value: bundle (b),
// console-socket, pid-file, preserve-fds, config (f).
RuntimeArgs parse_runtime_args(const std::vector<std::string_view>& args);

inline constexpr std::string_view kConfigFlag = "--gpufrac-config";
// gpufrac's own flag, only as the first argument (where Docker puts a runtime's runtimeArgs):
// `--gpufrac-config FILE` or `--gpufrac-config=FILE`. Removes it from argv (argc shrinks, argv stays
// NULL-terminated) and returns FILE; "" when absent. FILE must be an absolute path.
Result<std::string> take_config_flag(int& argc, char** argv);

}  // namespace gpufrac::wrapper
