// The container runtime part of `gpufrac node setup`: which files register the handler "gpufrac"
// (engine-config/ renders them), and how the runtime is restarted to load them.
//
//   containerd  a drop-in conf.d/99-gpufrac.toml next to --runtime-config (default
//               /etc/containerd/config.toml), imported by it, of the file's own version (2 or 3),
//               with the CRI tables repeated and CDI turned on where it is off
//   k3s, rke2   config-v3.toml.tmpl / config.toml.tmpl next to the rendered config.toml
//               (--runtime-config; default under /var/lib/rancher/<k3s|rke2>/agent/etc/containerd/)
//   crio        crio.conf.d/99-gpufrac.toml next to --runtime-config (default /etc/crio/crio.conf)
//   none        nothing
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/node/host_files.hpp"
#include "core/error.hpp"
#include "engine-config/configure.hpp"

namespace gpufrac::cli::node {

enum class Runtime { containerd, k3s, rke2, crio, none };
enum class Restart { systemd, signal, none };

std::optional<Runtime> runtime_from(const std::string& name);
std::optional<Restart> restart_from(const std::string& name);
const char* to_string(Runtime r);

// The files to write (host paths; each with its current and wanted content).
Result<engine_config::Plan> plan_runtime(const HostFiles& host, Runtime runtime, const std::string& runtime_config,
                                         const std::string& runtime_binary,
                                         const std::vector<std::string>& cdi_spec_dirs);

// Restarts (systemd: `systemctl restart` of the runtime's active unit; signal: SIGHUP to the process
// serving the runtime's socket, found through SO_PEERCRED). `none` does nothing.
Result<> restart_runtime(const HostFiles& host, Runtime runtime, Restart mode);

}  // namespace gpufrac::cli::node
