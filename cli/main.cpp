// gpufrac: the operator CLI. Each subcommand lives in its own cmd_*.cpp and registers itself here.
// `gpufrac` or a command group alone prints its help; --config is accepted before or after the
// subcommand; command-line mistakes exit 2 with a suggestion (cli/usage.hpp).
#include <CLI/CLI.hpp>

#include "cli/cmd_node.hpp"
#include "cli/context.hpp"
#include "cli/usage.hpp"
#include "core/build_info.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gpufrac: fractional NVIDIA GPUs and MIG instances for OCI containers", "gpufrac"};
  app.set_version_flag("--version", std::string("gpufrac ") + gpufrac::build::kVersion);
  app.fallthrough();             // subcommands inherit it: a parent's option (--config) may follow them
  app.require_subcommand(0, 1);  // one command; none prints the help
  gpufrac::cli::Context ctx;
  app.add_option("--config", ctx.config_path,
                 std::string("Config file (default: $GPUFRAC_CONFIG, else ") + gpufrac::build::kConfigPath + ")");
  gpufrac::cli::add_info_command(app, ctx);
  gpufrac::cli::add_simulate_command(app, ctx);
  gpufrac::cli::add_status_command(app, ctx);
  gpufrac::cli::add_metrics_command(app, ctx);
  gpufrac::cli::add_gc_command(app, ctx);
  gpufrac::cli::add_ledger_command(app, ctx);
  gpufrac::cli::add_cdi_command(app, ctx);
  gpufrac::cli::add_runtime_command(app, ctx);
  gpufrac::cli::add_mig_command(app, ctx);
  gpufrac::cli::add_mps_command(app, ctx);
  gpufrac::cli::add_node_command(app, ctx);
  gpufrac::cli::add_driver_limit_command(app, ctx);
  gpufrac::cli::add_reclaim_command(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return gpufrac::cli::report_usage_error(app, e);
  }
  if (gpufrac::cli::print_group_help(app)) return 0;
  return ctx.exit_code;
}
