// `gpufrac cdi generate [--output FILE|-] [--format yaml|json] [--machine FILE] [--kind VENDOR/CLASS]
// [--json]`: writes the CDI spec for this node (cdi/spec.hpp) atomically, mode 0644 (default
// cdi.output), and the static preload file it mounts (<state-dir>/cdi/ld.so.preload). A node with
// nothing to offer gets no spec: a stale one is removed, so runtimes stop offering devices that are
// gone. Warns (stderr) when the hook, shim or device nodes the spec names are missing under
// host-root (the containers would fail), saying what makes them; MIG devices left out for want of
// capability nodes are one line.
// --machine is a preview: the hook books on the node's own inventory, not on that file.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cdi/cdi_names.hpp"
#include "cdi/render.hpp"
#include "cdi/spec.hpp"
#include "cdi/spec_file.hpp"
#include "cdi/validate.hpp"
#include "cli/cmd_cdi.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"

namespace gpufrac::cli {

namespace {

Result<cdi::Format> format_of(const GenerateOptions& o, const std::string& output) {
  if (o.format == "json") return cdi::Format::json;
  if (o.format == "yaml") return cdi::Format::yaml;
  if (!o.format.empty()) return user_error("--format: " + text::quote(o.format) + " is not a format; use yaml or json");
  return output.ends_with(".json") ? cdi::Format::json : cdi::Format::yaml;
}

// The hook must read the same config: a relative --config becomes absolute in the spec's hooks.
void absolute_source(Config& cfg) {
  if (cfg.source.empty() || cfg.source.front() == '/' || !fs::exists(cfg.source)) return;
  std::error_code ec;
  auto abs = std::filesystem::absolute(cfg.source, ec);
  if (!ec) cfg.source = abs.lexically_normal().string();
}

// The spec mounts the preload file, so it is written with the spec. Printing the spec (a preview,
// perhaps without the rights to write state) only warns when it cannot.
Result<> write_preload(const Config& cfg, bool preview) {
  const std::string path = cdi::cdi_preload_path(cfg);
  auto r = fs::make_dirs(fs::dirname(path), 0755);
  if (r) r = fs::write_file_atomic(path, cdi::cdi_preload_content(), 0644);
  if (!r && preview) {
    std::fprintf(stderr, "gpufrac: warning: %s\n", r.error().message.c_str());
    return {};
  }
  return r;
}

int no_devices(Context& ctx, const std::string& output) {
  std::fprintf(stderr, "gpufrac: this node offers no CDI device (no GPU outside MIG mode, no MIG instance)");
  if (output != "-" && fs::exists(output)) {
    if (::unlink(output.c_str()) != 0) return ctx.fail(sys_error("cannot remove " + output).error());
    std::fprintf(stderr, "; removed %s", output.c_str());
  }
  std::fprintf(stderr, "\n");
  return 0;
}

Result<std::string> render_spec(const cdi::Spec& spec, cdi::Format format) {
  auto json = cdi::spec_json(spec);
  for (const auto& p : cdi::validate_spec(json))
    if (p.severity == cdi::Severity::error)
      return internal_error("the generated spec fails validation: " + cdi::format_problem(p));
  return cdi::render(json, format, cdi::kSpecHeader);
}

// The spec names these host files; a runtime fails every container that uses it without them.
std::vector<std::string> missing_files(const Config& cfg) {
  std::vector<std::string> out;
  if (!fs::exists(cfg.hook_path))
    out.push_back("the spec's hooks run " + cfg.hook_path + " (hook.path), which does not exist");
  if (!fs::exists(cfg.shim_path))
    out.push_back("the spec mounts " + cfg.shim_path + " (shim.path), which does not exist");
  return out;
}

// What a simulated node's host root or a real node's /dev lacks of what the spec names, as one line
// saying what makes it (a runtime fails every container that gets a missing node).
std::vector<std::string> missing_nodes(const Config& cfg, const Inventory& inv) {
  std::vector<std::string> missing;
  auto check = [&](const DeviceNodeInfo& n) {
    if (!n.path.empty() && !fs::exists(cfg.host_path(n.path))) missing.push_back(n.path);
  };
  for (const auto& n : inv.control_nodes) check(n);
  for (const auto& g : inv.gpus) {
    if (!g.mig_enabled) check(g.node);
    for (const auto& m : g.mig_instances)
      for (const auto& n : m.cap_nodes) check(n);
  }
  if (missing.empty()) return {};
  const std::string fix = uses_simulated_machine(cfg)
                              ? text::cat("gpufrac simulate init-root --machine ", cfg.nvml.machine, " --root ",
                                          cfg.host_root, " makes them")
                              : "the driver makes them (nvidia-modprobe, or nvidia-smi once)";
  return {text::cat("host-root ", cfg.host_root, " lacks ", missing.size(),
                    missing.size() == 1 ? " device node" : " device nodes", " the spec names (",
                    text::join(missing, ", "), "); ", fix)};
}

// Every MIG device left out for want of capability nodes, as one line: the host's mig-minors does not
// list their instances (a simulated root made for another machine, most likely).
void collapse_cap_warnings(std::vector<std::string>& warnings, const Config& cfg) {
  constexpr std::string_view kNoCaps = "has no capability device nodes";
  const auto n = std::count_if(warnings.begin(), warnings.end(),
                               [&](const std::string& w) { return w.find(kNoCaps) != std::string::npos; });
  if (n < 2) return;
  std::erase_if(warnings, [&](const std::string& w) { return w.find(kNoCaps) != std::string::npos; });
  warnings.push_back(text::cat(n, " MIG devices left out: their instances have no capability device nodes in ",
                               cfg.host_path("/proc/driver/nvidia-caps/mig-minors"),
                               uses_simulated_machine(cfg)
                                   ? text::cat("; gpufrac simulate init-root --machine ", cfg.nvml.machine, " --root ",
                                               cfg.host_root, " writes it for this machine")
                                   : std::string("; the driver lists them once MIG mode is on")));
}

// The spec builder's warnings (MIG devices without capability nodes in one line), then what the
// spec names that the host lacks.
std::vector<std::string> all_warnings(const cdi::Built& built, const Config& cfg, const Inventory& inv) {
  std::vector<std::string> warnings = built.warnings;
  collapse_cap_warnings(warnings, cfg);
  if (built.spec.devices.empty()) return warnings;
  for (auto& m : missing_files(cfg)) warnings.push_back(std::move(m));
  for (auto& m : missing_nodes(cfg, inv)) warnings.push_back(std::move(m));
  return warnings;
}

void print_summary(bool json, const std::string& kind, const std::string& output, std::size_t devices,
                   const std::vector<std::string>& warnings) {
  if (json) {
    nlohmann::json j{{"output", output}, {"kind", kind}, {"devices", devices}, {"warnings", warnings}};
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  if (devices == 0) return;
  std::printf("CDI spec for %zu devices of kind %s written to %s\n", devices, kind.c_str(), output.c_str());
}

int run_generate(Context& ctx, const GenerateOptions& o) {
  auto cfg = ctx.load(o.machine);
  if (!cfg) return ctx.fail(cfg.error());
  absolute_source(*cfg);
  auto kind = cdi::parse_kind(o.kind);
  if (!kind) return ctx.fail(kind.error().wrap("--kind"));
  const std::string output = o.output.empty() ? cfg->cdi.output : o.output;
  if (output != "-" && !cdi::is_spec_file_name(fs::basename(output)))
    return ctx.fail(user_error("--output: " + text::quote(output) +
                               ": runtimes read only *.yaml and *.json files; use a name ending in .yaml or .json")
                        .error());
  auto format = format_of(o, output);
  if (!format) return ctx.fail(format.error());
  if (o.json && output == "-")
    return ctx.fail(
        user_error("--json describes the spec written to a file; with --output - use --format json").error());
  auto inv = discover(*cfg);
  if (!inv) return ctx.fail(inv.error());
  auto built = cdi::build_spec(*inv, *cfg, kind->str());
  if (!built) return ctx.fail(built.error());
  const std::vector<std::string> warnings = all_warnings(*built, *cfg, *inv);
  for (const auto& w : warnings) std::fprintf(stderr, "gpufrac: warning: %s\n", w.c_str());
  if (built->spec.devices.empty()) {
    const int rc = no_devices(ctx, output);
    if (rc == 0 && o.json) print_summary(true, kind->str(), output, 0, warnings);
    return rc;
  }
  auto text = render_spec(built->spec, *format);
  if (!text) return ctx.fail(text.error());
  if (auto r = write_preload(*cfg, output == "-"); !r) return ctx.fail(r.error());
  if (output == "-") {
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
  }
  if (auto r = cdi::write_spec_file(output, *text); !r) return ctx.fail(r.error());
  print_summary(o.json, kind->str(), output, built->spec.devices.size(), warnings);
  return 0;
}

}  // namespace

void add_cdi_generate_command(CLI::App& cdi, Context& ctx) {
  auto* cmd = cdi.add_subcommand("generate", "Write the CDI spec for this node's GPUs, MIG instances and shares");
  auto o = std::make_shared<GenerateOptions>();
  cmd->add_option("--output", o->output, "Spec file, or - for stdout (default cdi.output: /var/run/cdi/gpufrac.yaml)");
  cmd->add_option("--format", o->format, "yaml or json (default: from the file name; yaml for -)");
  cmd->add_option("--machine", o->machine,
                  "Preview: the spec for a simulated machine file (the hook books on this node's own inventory, "
                  "not on this file)");
  cmd->add_option("--kind", o->kind, "CDI kind vendor/class (default gpufrac.io/gpu)");
  cmd->add_flag("--json", o->json, "Print what was written (file, kind, devices, warnings) as JSON");
  cmd->callback([&ctx, o] { ctx.exit_code = run_generate(ctx, *o); });
}

}  // namespace gpufrac::cli
