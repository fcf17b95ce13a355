#include "engine-config/containerd.hpp"

#include <fnmatch.h>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "engine-config/containerd_section.hpp"
#include "engine-config/toml_lite.hpp"

namespace gpufrac::engine_config {

using toml::KeyPath;
using toml::Statement;
using toml::StatementKind;

namespace {

using Doc = std::vector<Statement>;

// The root-level statement with this key, or -1.
long root_key(const Doc& doc, const char* key) {
  for (std::size_t i = 0; i < doc.size(); ++i)
    if (doc[i].kind == StatementKind::key_value && doc[i].table.empty() && doc[i].key == KeyPath{key})
      return static_cast<long>(i);
  return -1;
}

Result<Doc> parse_file(const SourceFile& f) {
  if (!f.text) return Doc{};
  return toml::parse(*f.text, f.path);
}

Result<int> config_version(const Doc& doc, const SourceFile& main, const std::optional<int>& wanted) {
  int version = wanted.value_or(2);
  if (main.text) {
    long i = root_key(doc, "version");
    auto v = i < 0 ? std::optional<std::int64_t>(1) : toml::integer_value(doc[static_cast<std::size_t>(i)].value);
    if (!v) return user_error(main.path + ": version must be an integer (2 or 3)");
    if (wanted && *wanted != *v)
      return user_error(
          text::cat(main.path, " has version ", *v, "; --config-version ", *wanted, " applies only to a missing file"));
    version = static_cast<int>(*v);
  }
  if (version == 2 || version == 3) return version;
  return user_error(text::cat(main.path, ": config version ", version,
                              " is not supported; gpufrac writes version 2 (containerd 1.x: `version = 2` and "
                              "[plugins.\"io.containerd.grpc.v1.cri\"]) and version 3 (containerd 2.x)"));
}

// The file whose CRI tables the drop-in repeats: the last one loaded before it that sets them.
Result<detail::CriSection> base_section(const Doc& main_doc, const ContainerdInput& in, int version) {
  const KeyPath cri = detail::cri_path(version);
  for (const auto& f : in.after) {
    auto doc = parse_file(f);
    if (!doc) return std::unexpected(doc.error());
    if (detail::sets_plugin(*doc, cri))
      return user_error(text::cat(f.path, " sets [", toml::key_path_text(cri), "] and containerd loads it after ",
                                  in.drop_in.path, ", which would drop the ", kRuntimeName,
                                  " runtime; move its settings into ", in.main.path,
                                  " or import it before the drop-in"));
  }
  std::optional<detail::CriSection> base;
  if (detail::sets_plugin(main_doc, cri)) {
    auto s = detail::extract_cri(main_doc, in.main.path, version);
    if (!s) return s;
    base = std::move(*s);
  }
  for (const auto& f : in.before) {
    auto doc = parse_file(f);
    if (!doc) return std::unexpected(doc.error());
    if (!detail::sets_plugin(*doc, cri)) continue;
    auto s = detail::extract_cri(*doc, f.path, version);
    if (!s) return s;
    base = std::move(*s);
  }
  return base ? std::move(*base) : detail::CriSection{};
}

// config.toml with the drop-in in its imports (unchanged when it is there already).
Result<std::string> main_with_import(const Doc& doc, const ContainerdInput& in, int version) {
  const std::string entry = in.drop_in.path;
  if (!in.main.text) return text::cat("version = ", version, "\nimports = ", toml::string_array({entry}), "\n");
  if (in.drop_in_imported) return *in.main.text;
  const long imports = root_key(doc, "imports");
  const long anchor = imports >= 0 ? imports : root_key(doc, "version");
  std::string out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    if (static_cast<long>(i) != imports) out += doc[i].raw;
    if (static_cast<long>(i) != anchor) continue;
    std::vector<std::string> entries;
    if (imports >= 0) {
      auto list = toml::string_array_value(doc[i].value);
      if (!list) return user_error(in.main.path + ": imports must be a list of strings");
      entries = *list;
    } else if (!out.empty() && out.back() != '\n') {
      out.push_back('\n');
    }
    entries.push_back(entry);
    out += "imports = " + toml::string_array(entries) + "\n";
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> containerd_imports(const SourceFile& file) {
  auto doc = parse_file(file);
  if (!doc) return std::unexpected(doc.error());
  long i = root_key(*doc, "imports");
  if (i < 0) return std::vector<std::string>{};
  auto list = toml::string_array_value((*doc)[static_cast<std::size_t>(i)].value);
  if (!list) return user_error(file.path + ": imports must be a list of strings");
  return *list;
}

std::string resolve_import(const std::string& entry, const std::string& importing_file) {
  if (entry.find('*') != std::string::npos || (!entry.empty() && entry.front() == '/')) return entry;
  return fs::dirname(importing_file) + "/" + entry;
}

bool imports_name(const std::vector<std::string>& entries, const std::string& main_path, const std::string& drop_in) {
  for (const auto& e : entries) {
    const std::string r = resolve_import(e, main_path);
    bool glob = r.find('*') != std::string::npos;
    if (glob ? ::fnmatch(r.c_str(), drop_in.c_str(), FNM_PATHNAME) == 0 : r == drop_in) return true;
  }
  return false;
}

Result<Plan> plan_containerd(const ContainerdInput& in) {
  auto doc = parse_file(in.main);
  if (!doc) return std::unexpected(doc.error());
  auto version = config_version(*doc, in.main, in.version);
  if (!version) return std::unexpected(version.error());
  auto cri = base_section(*doc, in, *version);
  if (!cri) return std::unexpected(cri.error());
  auto main_after = main_with_import(*doc, in, *version);
  if (!main_after) return std::unexpected(main_after.error());
  Plan plan;
  plan.files.push_back(
      {in.drop_in.path, in.drop_in.text, detail::render_drop_in(*cri, *version, in.runtime_path, {in.cdi_spec_dirs})});
  plan.files.push_back({in.main.path, in.main.text, *main_after});
  plan.reload = "restart containerd to load it: systemctl restart containerd";
  return plan;
}

}  // namespace gpufrac::engine_config
