// gpufrac's config on the host (/etc/gpufrac/config.yaml, where gpufrac-runtime and gpufrac-hook
// look by default): the mounted file (--config, e.g. a ConfigMap) as it is, but for the paths of
// the installed files (shim.path, hook.path, cli.path), which must name <install-dir>/current. Its
// top-level `shim:`, `hook:` and `cli:` entries are taken out (with their indented lines) and one
// block naming the installed files is appended; every other line, comments included, is kept.
// Without --config the host's own file is kept as it is; a host without one gets the block alone
// (every other setting at its default).
#pragma once

#include <string>

#include "cli/node/install.hpp"

namespace gpufrac::cli::node {

inline constexpr const char* kHostConfigPath = "/etc/gpufrac/config.yaml";

std::string render_host_config(const std::string& source, const Installed& installed);

}  // namespace gpufrac::cli::node
