// What every `gpufrac` subcommand shares: the --config flag, config loading with the --machine
// override, and turning an Error into the one-line message and exit code of DESIGN.md.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac::cli {

struct Context {
  std::string config_path;  // --config (else $GPUFRAC_CONFIG, else /etc/gpufrac/config.yaml)
  int exit_code = 0;

  // Loads the config; a non-empty machine switches inventory to that simulated machine file.
  Result<Config> load(const std::string& machine = "") const;
  // Prints "gpufrac: <message>" on stderr and returns the exit code (1 user, 2 internal).
  int fail(const Error& e);
};

// Each subcommand registers itself on the app; the callback stores its exit code in ctx.
void add_info_command(CLI::App& app, Context& ctx);
void add_simulate_command(CLI::App& app, Context& ctx);
void add_status_command(CLI::App& app, Context& ctx);
void add_metrics_command(CLI::App& app, Context& ctx);  // Prometheus: HTTP or a textfile
void add_gc_command(CLI::App& app, Context& ctx);
void add_ledger_command(CLI::App& app, Context& ctx);   // hidden: reserve/attach/release by hand
void add_cdi_command(CLI::App& app, Context& ctx);      // generate, list, validate
void add_runtime_command(CLI::App& app, Context& ctx);  // configure containerd|docker|crio|podman
void add_mig_command(CLI::App& app, Context& ctx);      // provision, plan (dynamic MIG)
void add_mps_command(CLI::App& app, Context& ctx);      // provision (SM sharing)

// set, clear: the driver's per-cgroup memory limits (the static front-ends run these).
void add_driver_limit_command(CLI::App& app, Context& ctx);
// run, start: the burst reclaimer (hidden; the front-ends start it).
void add_reclaim_command(CLI::App& app, Context& ctx);

}  // namespace gpufrac::cli
