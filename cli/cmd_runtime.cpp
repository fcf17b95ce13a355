// `gpufrac runtime configure containerd|docker|crio|podman [--dry-run] [--engine-config PATH]
// [--drop-in PATH] [--runtime-path PATH] [--config-version 2|3] [--json]`: registers
// gpufrac-runtime as the runtime handler "gpufrac" (engine-config/). Idempotent: a
// second run changes nothing and says so. --dry-run prints the change as a unified diff and writes
// nothing. --json prints what was (or would be) done as one object; notes go to stderr.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "core/build_info.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "engine-config/configure.hpp"
#include "engine-config/containerd.hpp"
#include "engine-config/diff.hpp"
#include "engine-config/files.hpp"

namespace gpufrac::cli {

namespace {

using namespace gpufrac::engine_config;

struct ConfigureArgs {
  std::string engine;
  bool dry_run = false;
  std::string config;
  std::string drop_in;
  std::string runtime_path = std::string(build::kBinDir) + "/gpufrac-runtime";
  int config_version = 0;  // 0 = from the file (2 for a missing one)
  bool json = false;
};

// gpufrac's config when it is not the default one (--config, else $GPUFRAC_CONFIG), absolute: what
// an engine must pass to gpufrac-runtime.
std::string named_config(const Context& ctx) {
  std::string path = ctx.config_path;
  if (path.empty())
    if (const char* env = std::getenv(kConfigEnv)) path = env;
  if (path.empty() || path == kDefaultConfigPath) return "";
  if (path.front() == '/') return path;
  char cwd[PATH_MAX];
  return ::getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path;
}

// An engine reads its files by absolute paths (containerd resolves a relative import against the
// importing file's directory): every path the plan compares or writes is made absolute first.
std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

Result<Plan> make_plan(Engine engine, const ConfigureArgs& a, const std::string& gpufrac_config) {
  const std::string config = a.config.empty() ? default_config_path(engine) : absolute_path(a.config);
  const std::string drop_in = a.drop_in.empty() ? default_drop_in_path(engine, config) : absolute_path(a.drop_in);
  if (engine == Engine::containerd) {
    std::optional<int> version = a.config_version ? std::optional(a.config_version) : std::nullopt;
    auto input = load_containerd(config, drop_in, a.runtime_path, version);
    if (!input) return std::unexpected(input.error());
    return plan_containerd(*input);
  }
  auto main = read_source(config);
  if (!main) return std::unexpected(main.error());
  if (engine == Engine::docker) return plan_docker(*main, a.runtime_path, gpufrac_config);
  auto drop = read_source(drop_in);
  if (!drop) return std::unexpected(drop.error());
  if (engine == Engine::crio) return plan_crio(*drop, a.runtime_path);
  return plan_podman(*main, *drop, a.runtime_path);
}

std::string file_list(const Plan& plan) {
  std::vector<std::string> paths;
  for (const auto& f : plan.files) paths.push_back(f.path);
  return text::join(paths, ", ");
}

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
}

// A note for the operator: on stderr, after the data already printed.
void note(const std::string& s) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s", s.c_str());
}

const char* action_of(const FileChange& f) {
  return !f.changed() ? "unchanged" : f.before ? "update" : "create";
}

// The --json form: every file of the plan with what happens to it, and how to reload the engine.
nlohmann::json plan_json(const Plan& plan, Engine engine, bool dry_run, const std::vector<Written>& written) {
  nlohmann::json files = nlohmann::json::array();
  bool changed = false;
  for (const auto& f : plan.files) {
    nlohmann::json j{{"path", f.path}, {"action", action_of(f)}};
    for (const auto& w : written)
      if (w.path == f.path && !w.backup.empty()) j["backup"] = w.backup;
    if (dry_run) j["diff"] = unified_diff(f.path, f.before, f.after);
    changed = changed || f.changed();
    files.push_back(std::move(j));
  }
  return {{"engine", to_string(engine)},
          {"dry_run", dry_run},
          {"changed", changed},
          {"files", std::move(files)},
          {"reload", changed ? plan.reload : ""},
          {"warnings", plan.warnings}};
}

int report_dry_run(const Plan& plan, Engine engine, bool json) {
  if (json) {
    print(plan_json(plan, engine, true, {}).dump(2) + "\n");
    return 0;
  }
  std::string out;
  for (const auto& f : plan.files) out += unified_diff(f.path, f.before, f.after);
  if (out.empty()) {
    print(text::cat(to_string(engine), ": already configured (", file_list(plan), "); nothing to change\n"));
    return 0;
  }
  print(out);
  note("(dry run: nothing was written)\n");
  return 0;
}

int run_configure(Context& ctx, const ConfigureArgs& a) {
  auto engine = engine_from(a.engine);
  if (!engine)
    return ctx.fail(
        user_error(text::quote(a.engine) + " is not an engine; use containerd, docker, crio or podman").error());
  if (a.runtime_path.empty() || a.runtime_path.front() != '/')
    return ctx.fail(user_error("--runtime-path " + text::quote(a.runtime_path) + ": must be an absolute path").error());
  if (a.config_version != 0 && a.config_version != 2 && a.config_version != 3)
    return ctx.fail(
        user_error(text::cat("--config-version ", a.config_version, ": use 2 (containerd 1.x) or 3 (2.x)")).error());
  const std::string gpufrac_config = named_config(ctx);
  auto plan = make_plan(*engine, a, gpufrac_config);
  if (!plan) return ctx.fail(plan.error().wrap(std::string("runtime configure ") + to_string(*engine)));
  for (const auto& w : plan->warnings) note("warning: " + w + "\n");
  if (a.dry_run) return report_dry_run(*plan, *engine, a.json);
  auto written = apply_plan(*plan);
  if (!written) return ctx.fail(written.error());
  std::string missing = fs::exists(a.runtime_path)
                            ? ""
                            : "note: " + a.runtime_path + " does not exist yet; install gpufrac-runtime there\n";
  if (!gpufrac_config.empty() && *engine != Engine::docker)
    missing += text::cat("note: ", to_string(*engine), " passes no arguments to a runtime: gpufrac-runtime reads ",
                         kDefaultConfigPath, ", or GPUFRAC_CONFIG=", gpufrac_config, " in ", to_string(*engine),
                         "'s environment\n");
  if (a.json) {
    print(plan_json(*plan, *engine, false, *written).dump(2) + "\n");
    note(missing);
    return 0;
  }
  std::string out;
  for (const auto& w : *written)
    out += w.created ? "wrote " + w.path + " (new file)\n"
                     : "updated " + w.path + (w.backup.empty() ? "" : " (backup: " + w.backup + ")") + "\n";
  if (written->empty())
    out = text::cat(to_string(*engine), ": already configured (", file_list(*plan), "); nothing changed\n");
  else
    out += plan->reload + "\n";
  print(out);
  note(missing);
  return 0;
}

}  // namespace

void add_runtime_command(CLI::App& app, Context& ctx) {
  auto* runtime = app.add_subcommand("runtime", "Container engine integration of gpufrac-runtime");
  runtime->require_subcommand(0, 1);  // alone: its help (cli/usage.hpp)
  auto a = std::make_shared<ConfigureArgs>();
  auto* cmd = runtime->add_subcommand("configure", "Register gpufrac-runtime as the runtime handler \"gpufrac\"");
  cmd->add_option("engine", a->engine, "containerd, docker, crio or podman")->required();
  cmd->add_flag("--dry-run", a->dry_run, "Print the change as a diff; write nothing");
  cmd->add_option("--engine-config", a->config,
                  "The engine's config (default /etc/containerd/config.toml, /etc/docker/daemon.json, "
                  "/etc/crio/crio.conf, /etc/containers/containers.conf)");
  cmd->add_option("--drop-in", a->drop_in,
                  "The drop-in file (default next to the config, e.g. conf.d/99-gpufrac.toml)");
  cmd->add_option("--runtime-path", a->runtime_path, "Path of gpufrac-runtime")->capture_default_str();
  cmd->add_option("--config-version", a->config_version, "containerd: version of a config.toml to create (2 or 3)");
  cmd->add_flag("--json", a->json, "Print what was (or, with --dry-run, would be) done as JSON");
  cmd->callback([&ctx, a] { ctx.exit_code = run_configure(ctx, *a); });
}

}  // namespace gpufrac::cli
