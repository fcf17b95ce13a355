// gpufrac-runtime: an OCI runtime wrapper, argv-compatible with runc. On create/run of a bundle whose
// config.json asks for a GPU (gpufrac annotations or gpufrac CDI devices in cdi.k8s.io/* annotations)
// it books the share, writes the container's files and adds the Edits to config.json; then, for every
// command, it replaces itself with the low-level runtime (config runtimes:, by absolute path) with the
// same arguments.
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/build_info.hpp"
#include "core/config/config.hpp"
#include "core/log.hpp"
#include "metrics/counter_file.hpp"
#include "runtime-wrapper/argv.hpp"
#include "runtime-wrapper/error_log.hpp"
#include "runtime-wrapper/inject.hpp"
#include "runtime-wrapper/runtime_exec.hpp"

namespace {

std::string current_dir() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

std::optional<std::string> path_env() {
  const char* p = std::getenv("PATH");
  return p ? std::optional<std::string>(p) : std::nullopt;
}

// `gpufrac-runtime --help` and `--version` (before any command): gpufrac's part first, then the
// runtime's own, which the exec below prints.
void print_own_help_or_version(const std::vector<std::string_view>& rest) {
  for (std::string_view a : rest) {
    if (!a.starts_with("-")) return;  // the command: its --help is the runtime's
    if (a == "--version" || a == "-v") {
      std::printf("gpufrac-runtime %s (gpufrac); the runtime it runs:\n", gpufrac::build::kVersion);
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "gpufrac-runtime %s: gpufrac's OCI runtime wrapper (gpufrac-runtime(8)), argv-compatible with runc.\n"
          "On create or run of a container that asks for a GPU (gpufrac.io/* annotations, GPUFRAC_* variables\n"
          "in its environment, or gpufrac.io/gpu CDI devices in cdi.k8s.io/* annotations) it books the share\n"
          "and adds it to config.json; then it runs\n"
          "the runtime named by runtimes: in the config (default runc, then crun) with the same arguments.\n"
          "Config: --gpufrac-config FILE (as the first argument), else $GPUFRAC_CONFIG, else %s.\n\n"
          "The runtime's own help:\n\n",
          gpufrac::build::kVersion, gpufrac::build::kConfigPath);
    } else {
      continue;
    }
    std::fflush(stdout);
    return;
  }
}

// A create that asked gpufrac for a GPU goes into the counter file for `gpufrac metrics`.
void count(const gpufrac::Config& cfg, std::uint64_t started_ns, const gpufrac::wrapper::InjectOutcome& outcome,
           bool refused) {
  if (!outcome.asked) return;
  gpufrac::metrics::Observation o{gpufrac::metrics::Timer::wrapper_create,
                                  gpufrac::metrics::monotonic_ns() - started_ns, refused, outcome.why};
  if (auto r = gpufrac::metrics::record(cfg.state_dir, o); !r) gpufrac::log::warn("metrics: " + r.error().message);
}

// A refusal about the node (capacity, inventory, ledger, runtimes) says which config it was decided
// under: an engine that starts the wrapper without the environment it was given (dockerd's
// GPUFRAC_CONFIG does not reach it) otherwise fails with no hint. Refusals of the request's own
// text (malformed, host PID) do not need it.
gpufrac::Error with_config_source(gpufrac::Error e, const gpufrac::Config& cfg) {
  if (e.message.find(cfg.source) == std::string::npos) e.message += " (config: " + cfg.source + ")";
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpufrac::wrapper;
  const std::uint64_t started_ns = gpufrac::metrics::monotonic_ns();
  // `--gpufrac-config FILE` first (Docker's runtimeArgs): gpufrac's, taken out of what runc gets.
  auto config_flag = take_config_flag(argc, argv);
  std::vector<std::string_view> rest(argv + (argc > 0 ? 1 : 0), argv + argc);
  const RuntimeArgs args = parse_runtime_args(rest);
  if (!config_flag) return report_error(args, config_flag.error());
  if (args.command.empty()) print_own_help_or_version(rest);
  auto cfg = gpufrac::select_config(*config_flag);
  if (!cfg) return report_error(args, cfg.error());
  auto runtime = resolve_runtime(cfg->runtimes, path_env(), self_file());
  if (!runtime) return report_error(args, with_config_source(runtime.error(), *cfg));
  Injection injection;
  if (args.creates) {
    InjectOutcome outcome;
    auto r = inject(args, current_dir(), *cfg, &outcome);
    count(*cfg, started_ns, outcome, !r);
    using gpufrac::metrics::Refusal;
    const bool about_node = outcome.why != Refusal::malformed && outcome.why != Refusal::host_pid;
    if (!r) return report_error(args, about_node ? with_config_source(r.error(), *cfg) : r.error());
    injection = std::move(*r);
  }
  if (!injection.changed) return report_error(args, exec_runtime(*runtime, argc, argv));
  // Booked and edited: the runtime runs as a child, so a create it refuses (bad argv, a failing
  // hook, no such rootfs) is undone at once instead of holding a pending booking until
  // allocation.pending-timeout.
  auto status = run_runtime(*runtime, argc, argv);
  if (!status || exit_code_of(*status) != 0) undo(injection, *cfg);
  if (!status) return report_error(args, status.error());
  return exit_code_of(*status);
}
