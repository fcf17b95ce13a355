// `gpufrac cdi list [--spec-dir DIR...] [--json]` and `gpufrac cdi validate FILE...`; generate is in
// cmd_cdi_generate.cpp.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "cdi/spec_dirs.hpp"
#include "cdi/spec_file.hpp"
#include "cdi/spec_lines.hpp"
#include "cdi/validate.hpp"
#include "cli/cmd_cdi.hpp"
#include "cli/table.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

constexpr const char* kSpecDirForm = "name a directory of CDI specs, e.g. /var/run/cdi";

// A directory named on the command line must be one (a typo must not read as "no device"); the
// config's cdi.spec-dirs may be missing, as the CDI library's own defaults may.
Result<> check_named_dirs(const std::vector<std::string>& dirs) {
  for (const auto& d : dirs) {
    struct stat st {};
    if (::stat(d.c_str(), &st) != 0) {
      const int err = errno;
      return std::unexpected(
          Error{text::cat("--spec-dir ", text::quote(d), ": ", std::strerror(err), "; ", kSpecDirForm), err,
                ErrorKind::user});
    }
    if (!S_ISDIR(st.st_mode))
      return user_error(text::cat("--spec-dir ", text::quote(d), ": not a directory; ", kSpecDirForm));
  }
  return {};
}

int run_list(Context& ctx, std::vector<std::string> dirs, bool json) {
  if (auto r = check_named_dirs(dirs); !r) return ctx.fail(r.error());
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
  } else if (!listing.devices.empty()) {
    Table t({"DEVICE", "SPEC"});
    for (const auto& d : listing.devices) t.add({d.name, d.file});
    out = t.render();
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (listing.devices.empty()) {
    std::fflush(stdout);
    std::fprintf(stderr, "gpufrac: no CDI device found in %s\n", text::join(dirs, ", ").c_str());
  }
  return 0;
}

struct FileReport {
  std::string file;
  std::optional<nlohmann::ordered_json> spec;          // nullopt: unreadable or not YAML
  std::vector<std::pair<int, cdi::Problem>> problems;  // with their lines
  bool valid() const {
    return spec && std::none_of(problems.begin(), problems.end(),
                                [](const auto& p) { return p.second.severity == cdi::Severity::error; });
  }
};

FileReport check_file(const std::string& file) {
  FileReport r{file, std::nullopt, {}};
  auto text = fs::read_file(file, cdi::kMaxSpecBytes);
  auto spec = text ? cdi::parse_spec_text(*text, file) : std::unexpected(text.error());
  if (!spec) {
    r.problems.push_back({0, cdi::Problem{cdi::Severity::error, "", spec.error().message}});
    return r;
  }
  const cdi::SpecLines lines = cdi::spec_lines(*text);
  for (auto& p : cdi::validate_spec(*spec)) r.problems.emplace_back(cdi::line_of(lines, p.location), std::move(p));
  r.spec = std::move(*spec);
  return r;
}

// "gpufrac: FILE:LINE: error: LOCATION: MESSAGE", as config errors name file:line.
std::string problem_text(const FileReport& r, int line, const cdi::Problem& p) {
  if (line == 0) return "gpufrac: " + p.message + "\n";  // the file itself (unreadable, not YAML)
  return text::cat("gpufrac: ", r.file, ":", line, ": ", p.severity == cdi::Severity::error ? "error" : "warning", ": ",
                   p.location.empty() ? "" : p.location + ": ", p.message, "\n");
}

std::string summary(const FileReport& r) {
  const std::size_t n = (*r.spec)["devices"].size();
  return text::cat(r.file, ": valid (cdiVersion ", (*r.spec)["cdiVersion"].get<std::string>(), ", kind ",
                   (*r.spec)["kind"].get<std::string>(), ", ", n, n == 1 ? " device)" : " devices)");
}

nlohmann::json report_json(const FileReport& r) {
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& [line, p] : r.problems)
    problems.push_back({{"line", line},
                        {"severity", p.severity == cdi::Severity::error ? "error" : "warning"},
                        {"location", p.location},
                        {"message", p.message}});
  nlohmann::json j{{"file", r.file}, {"valid", r.valid()}, {"problems", std::move(problems)}};
  if (r.valid()) {
    j["cdiVersion"] = (*r.spec)["cdiVersion"];
    j["kind"] = (*r.spec)["kind"];
    j["devices"] = (*r.spec)["devices"].size();
  }
  return j;
}

// Problems on stderr (one line each, prefixed), the verdict of each valid file on stdout.
int run_validate(const std::vector<std::string>& files, bool json) {
  bool ok = true;
  nlohmann::json all = nlohmann::json::array();
  for (const auto& f : files) {
    FileReport r = check_file(f);
    ok = r.valid() && ok;
    if (json) {
      all.push_back(report_json(r));
      continue;
    }
    for (const auto& [line, p] : r.problems) std::fputs(problem_text(r, line, p).c_str(), stderr);
    if (r.valid()) std::printf("%s\n", summary(r).c_str());
    std::fflush(stdout);
  }
  if (json) std::printf("%s\n", all.dump(2).c_str());
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
  auto validate_json = std::make_shared<bool>(false);
  validate->add_option("files", *files, "Spec files (YAML or JSON)")->required();
  validate->add_flag("--json", *validate_json, "Print each file's problems as JSON");
  validate->callback([&ctx, files, validate_json] { ctx.exit_code = run_validate(*files, *validate_json); });
}

}  // namespace gpufrac::cli
