// `gpufrac simulate init-root --machine FILE --root DIR [--no-nodes]`: builds a simulated host root
// (/proc/devices, MIG capability minors, /dev/nvidia* character nodes) for tests and the demo.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "nvml/sim_root.hpp"

namespace gpufrac::cli {

namespace {

int run_init_root(Context& ctx, const std::string& machine_file, const std::string& root, bool no_nodes, bool json) {
  auto machine = load_simulated_machine(machine_file);
  if (!machine) return ctx.fail(machine.error());
  if (auto r = write_simulated_host_root(*machine, root, !no_nodes); !r) return ctx.fail(r.error());
  if (json)
    std::printf("%s\n",
                nlohmann::json{{"machine", machine_file}, {"root", root}, {"device_nodes", !no_nodes}}.dump(2).c_str());
  else
    std::printf("simulated host root for %s written to %s\n", machine_file.c_str(), root.c_str());
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Context& ctx) {
  auto* sim = app.add_subcommand("simulate", "Tools for running gpufrac on a simulated GPU machine");
  sim->require_subcommand(0, 1);  // alone: its help (cli/usage.hpp)
  auto* init = sim->add_subcommand("init-root", "Create a simulated host root (proc files and device nodes)");
  auto machine = std::make_shared<std::string>();
  auto root = std::make_shared<std::string>();
  auto no_nodes = std::make_shared<bool>(false);
  init->add_option("--machine", *machine, "Simulated machine file")->required();
  init->add_option("--root", *root, "Directory to populate (the config's host-root)")->required();
  init->add_flag("--no-nodes", *no_nodes, "Write the proc files only (no mknod)");
  auto json = std::make_shared<bool>(false);
  init->add_flag("--json", *json, "Print what was written as JSON");
  init->callback(
      [&ctx, machine, root, no_nodes, json] { ctx.exit_code = run_init_root(ctx, *machine, *root, *no_nodes, *json); });
}

}  // namespace gpufrac::cli
