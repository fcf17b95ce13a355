// `gpufrac cdi list [--spec-dir DIR...] [--json]` and `gpufrac cdi validate FILE...`; generate is in
// cmd_cdi_generate.cpp.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cdi/spec_dirs.hpp"
#include "cdi/spec_file.hpp"
#include "cdi/validate.hpp"
#include "cli/cmd_cdi.hpp"
#include "cli/table.hpp"
#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

int run_list(Context& ctx, std::vector<std::string> dirs, bool json) {
  if (dirs.empty()) {
    auto cfg = ctx.load();
    if (!cfg) return ctx.fail(cfg.error());
    dirs = cfg->cdi.spec_dirs;
  }
  cdi::Listing listing = cdi::list_spec_dirs(dirs);
  for (const auto& w : listing.warnings) std::fprintf(stderr, "gpufrac: warning: %s\n", w.c_str());
  std::string out;
  if (json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& d : listing.devices) a.push_back({{"name", d.name}, {"spec", d.file}});
    out = a.dump(2) + "\n";
  } else {
    Table t({"DEVICE", "SPEC"});
    for (const auto& d : listing.devices) t.add({d.name, d.file});
    out = t.render();
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

// Prints the file's problems; true when it has no error.
bool validate_file(const std::string& file) {
  auto spec = cdi::read_spec_file(file);
  if (!spec) {
    std::printf("%s\n", spec.error().message.c_str());
    return false;
  }
  auto problems = cdi::validate_spec(*spec);
  for (const auto& p : problems) std::printf("%s: %s\n", file.c_str(), cdi::format_problem(p).c_str());
  if (cdi::has_errors(problems)) return false;
  const std::size_t n = (*spec)["devices"].size();
  std::printf("%s: valid (cdiVersion %s, kind %s, %zu device%s)\n", file.c_str(),
              (*spec)["cdiVersion"].get<std::string>().c_str(), (*spec)["kind"].get<std::string>().c_str(), n,
              n == 1 ? "" : "s");
  return true;
}

int run_validate(const std::vector<std::string>& files) {
  bool ok = true;
  for (const auto& f : files) ok = validate_file(f) && ok;
  return ok ? 0 : 1;
}

}  // namespace

void add_cdi_command(CLI::App& app, Context& ctx) {
  auto* cdi = app.add_subcommand("cdi", "CDI specs: generate, list and validate");
  cdi->require_subcommand(0, 1);  // alone: its help (cli/usage.hpp)
  add_cdi_generate_command(*cdi, ctx);

  auto* list = cdi->add_subcommand("list", "Fully qualified CDI devices the spec directories offer");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  list->add_option("--spec-dir", *dirs, "Spec directory, lowest priority first (default cdi.spec-dirs)");
  list->add_flag("--json", *json, "Print JSON");
  list->callback([&ctx, dirs, json] { ctx.exit_code = run_list(ctx, *dirs, *json); });

  auto* validate =
      cdi->add_subcommand("validate", "Check spec files as a runtime's CDI library would (exit 1 on errors)");
  auto files = std::make_shared<std::vector<std::string>>();
  validate->add_option("files", *files, "Spec files (YAML or JSON)")->required();
  validate->callback([&ctx, files] { ctx.exit_code = run_validate(*files); });
}

}  // namespace gpufrac::cli
