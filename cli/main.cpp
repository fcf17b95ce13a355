// gpufrac: the operator CLI. Each subcommand lives in its own cmd_*.cpp and registers itself here.
#include <CLI/CLI.hpp>

#include "cli/context.hpp"
#include "core/build_info.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gpufrac: fractional NVIDIA GPUs and MIG instances for OCI containers", "gpufrac"};
  app.set_version_flag("--version", std::string("gpufrac ") + gpufrac::build::kVersion);
  app.require_subcommand(1);
  gpufrac::cli::Context ctx;
  app.add_option("--config", ctx.config_path, "Config file (default $GPUFRAC_CONFIG or /etc/gpufrac/config.yaml)");
  gpufrac::cli::add_info_command(app, ctx);
  gpufrac::cli::add_simulate_command(app, ctx);
  gpufrac::cli::add_status_command(app, ctx);
  gpufrac::cli::add_metrics_command(app, ctx);
  gpufrac::cli::add_gc_command(app, ctx);
  gpufrac::cli::add_ledger_command(app, ctx);
  gpufrac::cli::add_cdi_command(app, ctx);
  gpufrac::cli::add_runtime_command(app, ctx);
  gpufrac::cli::add_mig_command(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "gpufrac: %s (see gpufrac --help)\n", e.what());
    return 1;
  }
  return ctx.exit_code;
}
