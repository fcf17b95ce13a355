// `gpufrac node setup|teardown` (cli/node/setup.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/context.hpp"

namespace gpufrac::cli {

void add_node_command(CLI::App& app, Context& ctx);  // setup, teardown (the node DaemonSet)

}  // namespace gpufrac::cli
