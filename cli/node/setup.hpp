// `gpufrac node setup` and `gpufrac node teardown` (cli/cmd_node.cpp parses the flags): install
// the host files (install.hpp), gpufrac's config (host_config.hpp), the runtime handler
// (runtime_setup.hpp), restart the runtime only when its config changed, and write the ready file
// <host-root>/run/gpufrac/node-ready, first line the version, once everything is in place (with
// --restart none after a change, a second line says a restart is pending). Teardown undoes it:
// every file back byte for byte (host_files.hpp), the installed files and the ready file removed,
// but the installed versions kept while containers hold shares (their hooks run from there).
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac::cli::node {

struct NodeArgs {
  std::string host_root = "/";
  std::string install_dir = "/usr/local/gpufrac";
  std::string config;  // the config to install (e.g. a mounted ConfigMap); "" keeps the host's
  std::string runtime = "containerd";
  std::string runtime_config;
  std::string restart = "none";
  bool keep_running = false;
  std::string metrics_listen;
  bool teardown_on_exit = false;
  bool json = false;
};

inline constexpr const char* kReadyFile = "/run/gpufrac/node-ready";

Result<> node_setup(const NodeArgs& a);
Result<> node_teardown(const NodeArgs& a);

// Flag checks shared by both (one line naming the flag and the accepted form).
Result<> check_node_args(const NodeArgs& a);

}  // namespace gpufrac::cli::node
