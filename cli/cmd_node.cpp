// `gpufrac node setup|teardown`: a node's gpufrac installed and registered with its container
// runtime, from the node DaemonSet (the host's / mounted at --host-root) or on a plain host
// (cli/node/setup.hpp).
#include "cli/cmd_node.hpp"
#include "cli/context.hpp"
#include "cli/node/keep_running.hpp"
#include "cli/node/report.hpp"
#include "cli/node/setup.hpp"
#include "core/build_info.hpp"

namespace gpufrac::cli {

namespace {

void add_common(CLI::App* cmd, node::NodeArgs& a) {
  cmd->add_option("--host-root", a.host_root, "Where the host's / is mounted")->capture_default_str();
  cmd->add_option("--install-dir", a.install_dir, "Host directory of the installed files (never under /usr)")
      ->capture_default_str();
  cmd->add_option("--runtime", a.runtime, "containerd, k3s, rke2, crio or none")->capture_default_str();
  cmd->add_option("--runtime-config", a.runtime_config,
                  "Host path of the runtime's config (containerd config.toml, the rendered k3s/RKE2 config.toml, "
                  "crio.conf)");
  cmd->add_option("--restart", a.restart, "How the runtime loads a changed config: systemd, signal or none")
      ->capture_default_str();
}

}  // namespace

void add_node_command(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("node", "Install gpufrac on this node and register it with the container runtime");
  group->require_subcommand(0, 1);
  auto a = std::make_shared<node::NodeArgs>();
  auto* setup =
      group->add_subcommand("setup", "Install the host files, config and runtime handler; write the ready file");
  add_common(setup, *a);
  setup->add_option("--config", a->config,
                    "gpufrac config to install as /etc/gpufrac/config.yaml (default: keep the host's)");
  setup->add_flag("--keep-running", a->keep_running,
                  "Stay: refresh the inventory and CDI spec when the driver or MIG layout changes");
  setup->add_option("--metrics-listen", a->metrics_listen, "With --keep-running: serve metrics at HOST:PORT or :PORT");
  setup->add_flag("--teardown-on-exit", a->teardown_on_exit, "With --keep-running: run the teardown on SIGTERM");
  setup->add_flag("--json", a->json, "Print what was done as JSON");
  setup->callback([&ctx, a] {
    node::report().command = "node setup";
    if (auto r = node::node_setup(*a); !r) {
      ctx.exit_code = ctx.fail(r.error());
      return;
    }
    node::report().print(a->json, build::kVersion,
                         std::string("node setup: nothing to change (") + build::kVersion + ")");
    if (!a->keep_running) return;
    if (auto r = node::keep_running(*a); !r) ctx.exit_code = ctx.fail(r.error());
  });
  auto* teardown = group->add_subcommand("teardown", "Undo node setup: runtime config restored byte for byte");
  add_common(teardown, *a);
  teardown->add_flag("--json", a->json, "Print what was done as JSON");
  teardown->callback([&ctx, a] {
    node::report().command = "node teardown";
    if (auto r = node::node_teardown(*a); !r) {
      ctx.exit_code = ctx.fail(r.error());
      return;
    }
    node::report().print(a->json, build::kVersion, "node teardown: nothing to undo");
  });
}

}  // namespace gpufrac::cli
