// `gpufrac simulate init-root --machine FILE --root DIR [--no-nodes] [--driver-kit DIR]
// [--driver-layout debian|lib64|no-cache|prefix] [--no-driver]`: builds a simulated host root (/proc/devices,
// MIG capability minors, /dev/nvidia* character nodes and a driver install) for tests and the demo.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "nvml/sim_driver.hpp"
#include "nvml/sim_root.hpp"

namespace gpufrac::cli {

namespace {

struct InitRootOptions {
  std::string machine, root, kit, layout = "debian";
  bool no_nodes = false, no_driver = false, json = false;
};

// The kit the build made next to this program (<build>/bin/gpufrac -> <build>/fakes/driver-kit).
std::string default_kit() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  const std::string kit =
      fs::dirname(fs::dirname(std::string(self, static_cast<std::size_t>(n)))) + "/fakes/driver-kit";
  return fs::exists(kit + "/lib") ? kit : "";
}

// Installs the simulated driver from the kit; returns the kit used ("" when there is none).
std::expected<std::string, Error> install_driver(const SimulatedMachine& machine, const InitRootOptions& o) {
  const std::string kit = o.kit.empty() ? default_kit() : o.kit;
  if (kit.empty()) {
    std::fprintf(stderr,
                 "gpufrac: note: no driver kit (built with the tests into <build>/fakes/driver-kit; "
                 "--driver-kit names one): the simulated node has no driver user space\n");
    return std::string();
  }
  const SimDriverLayout layout = o.layout == "lib64"      ? SimDriverLayout::lib64
                                 : o.layout == "no-cache" ? SimDriverLayout::no_cache
                                 : o.layout == "prefix"   ? SimDriverLayout::prefix
                                                          : SimDriverLayout::debian;
  if (auto r = write_simulated_driver(machine, o.root, {kit, layout}); !r) return std::unexpected(r.error());
  return kit;
}

int run_init_root(Context& ctx, const InitRootOptions& o) {
  std::error_code ec;
  if (std::filesystem::weakly_canonical(o.root, ec) == "/")
    return ctx.fail(user_error("--root " + text::quote(o.root) +
                               ": is this host's root; a simulated root is a directory of its own, e.g. /tmp/gpu-root")
                        .error());
  auto machine = load_simulated_machine(o.machine);
  if (!machine) return ctx.fail(machine.error());
  if (auto r = write_simulated_host_root(*machine, o.root, !o.no_nodes); !r) return ctx.fail(r.error());
  std::string kit;
  if (!o.no_driver) {
    auto installed = install_driver(*machine, o);
    if (!installed) return ctx.fail(installed.error());
    kit = *installed;
  }
  const std::string version = kit.empty() ? "" : machine->inventory.driver_version;
  if (o.json) {
    nlohmann::json out{{"machine", o.machine}, {"root", o.root}, {"device_nodes", !o.no_nodes}};
    out["driver"] = kit.empty() ? nlohmann::json(nullptr)
                                : nlohmann::json{{"version", version}, {"layout", o.layout}, {"kit", kit}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("simulated host root for %s written to %s\n", o.machine.c_str(), o.root.c_str());
  if (!kit.empty())
    std::printf("simulated NVIDIA driver %s (%s layout) installed from %s\n", version.c_str(), o.layout.c_str(),
                kit.c_str());
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Context& ctx) {
  auto* sim = app.add_subcommand("simulate", "Tools for running gpufrac on a simulated GPU machine");
  sim->require_subcommand(0, 1);  // alone: its help (cli/usage.hpp)
  auto* init = sim->add_subcommand("init-root", "Create a simulated host root (proc files, device nodes, driver)");
  auto o = std::make_shared<InitRootOptions>();
  init->add_option("--machine", o->machine, "Simulated machine file")->required();
  init->add_option("--root", o->root, "Directory to populate (the config's host-root)")->required();
  init->add_flag("--no-nodes", o->no_nodes, "Write the proc files only (no mknod)");
  init->add_option("--driver-kit", o->kit, "The simulated driver's files (default: <build>/fakes/driver-kit)");
  init->add_option("--driver-layout", o->layout,
                   "debian (/usr/lib/<multiarch>), lib64 (RHEL), no-cache or prefix (/usr/local/nvidia)")
      ->check(CLI::IsMember({"debian", "lib64", "no-cache", "prefix"}));
  init->add_flag("--no-driver", o->no_driver, "No driver install (proc files and nodes only)");
  init->add_flag("--json", o->json, "Print what was written as JSON");
  init->callback([&ctx, o] { ctx.exit_code = run_init_root(ctx, *o); });
}

}  // namespace gpufrac::cli
