#include "engine-config/containerd_section.hpp"

#include "core/text.hpp"
#include "engine-config/configure.hpp"

namespace gpufrac::engine_config::detail {

using toml::has_prefix;
using toml::KeyPath;
using toml::Statement;
using toml::StatementKind;

namespace {

KeyPath plus(KeyPath base, std::initializer_list<const char*> more) {
  for (const char* m : more) base.emplace_back(m);
  return base;
}

std::unexpected<Error> refuse(const std::string& file, const Statement& s, const std::string& problem) {
  return user_error(text::cat(file, ":", s.line, ": ", problem));
}

struct Paths {
  KeyPath cri, ours, runc, runc_options, default_runtime;
  explicit Paths(int version)
      : cri(cri_path(version)),
        ours(plus(cri, {"containerd", "runtimes", kRuntimeName})),
        runc(plus(cri, {"containerd", "runtimes", "runc"})),
        runc_options(plus(runc, {"options"})),
        default_runtime(plus(cri, {"containerd", "default_runtime_name"})) {}
};

// A key/value inside a CRI table: copied, and read for runc's options and the default runtime.
Result<> take_key_value(const Statement& s, const Paths& p, const std::string& file, CriSection& out) {
  const KeyPath full = s.full();
  if (has_prefix(full, p.ours) || (has_prefix(p.ours, full) && full.size() < p.ours.size()))
    return refuse(
        file, s,
        text::cat(toml::key_path_text(full), " is set as a value, so the ", kRuntimeName,
                  " runtime table cannot be added; write runtimes as [", toml::key_path_text(p.runc), "] tables"));
  if (has_prefix(full, p.runc)) out.has_runc = true;
  if (s.table == p.runc_options && s.key != KeyPath{"BinaryName"})
    out.runc_options.push_back(toml::key_path_text(s.key) + " = " + s.value);
  if (full == p.default_runtime)
    if (auto v = toml::string_value(s.value)) out.default_runtime = *v;
  if (s.table == p.cri && s.key == KeyPath{"cdi_spec_dirs"}) out.has_cdi_dirs = true;
  if (s.table == p.cri && s.key == KeyPath{"enable_cdi"}) {
    out.enable_cdi_at = out.text.size();
    out.enable_cdi_raw = s.raw;
    if (s.value == "true" || s.value == "false") out.enable_cdi = s.value == "true";
  }
  out.text += s.raw;
  return {};
}

}  // namespace

KeyPath cri_path(int version) {
  return {"plugins", version >= 3 ? "io.containerd.cri.v1.runtime" : "io.containerd.grpc.v1.cri"};
}

bool sets_plugin(const std::vector<Statement>& doc, const KeyPath& plugin) {
  for (const auto& s : doc) {
    if (s.kind == StatementKind::blank) continue;
    const KeyPath full = s.kind == StatementKind::key_value ? s.full() : s.table;
    if (has_prefix(full, plugin) || (s.kind == StatementKind::key_value && has_prefix(plugin, full))) return true;
  }
  return false;
}

Result<CriSection> extract_cri(const std::vector<Statement>& doc, const std::string& file, int version) {
  const Paths p(version);
  CriSection out;
  out.source = file;
  bool in_cri = false, ours = false;
  for (const auto& s : doc) {
    if (s.kind == StatementKind::table || s.kind == StatementKind::array_table) {
      in_cri = has_prefix(s.table, p.cri);
      ours = has_prefix(s.table, p.ours);
      if (in_cri && has_prefix(s.table, p.runc)) out.has_runc = true;
      if (in_cri && !ours) out.text += s.raw;
      if (s.kind == StatementKind::table && s.table == p.cri) out.root_at = out.text.size();
      continue;
    }
    if (!in_cri && s.kind == StatementKind::key_value && (has_prefix(s.full(), p.cri) || has_prefix(p.cri, s.full())))
      return refuse(file, s,
                    text::cat("sets the CRI plugin with dotted keys or an inline table; gpufrac needs [",
                              toml::key_path_text(p.cri), "] tables"));
    if (!in_cri || ours) continue;
    if (s.kind == StatementKind::blank) {
      out.text += s.raw;
      continue;
    }
    if (auto r = take_key_value(s, p, file, out); !r) return std::unexpected(r.error());
  }
  if (!out.text.empty() && out.text.back() != '\n') out.text.push_back('\n');
  return out;
}

namespace {

// The CRI tables, with CDI turned on where CdiWanted asks and it is off.
std::string cri_text(const CriSection& cri, int version, const CdiWanted& cdi, std::string& extra_table) {
  const bool off = cri.enable_cdi ? !*cri.enable_cdi : version < 3;
  if (cdi.spec_dirs.empty() || !off) return cri.text;
  std::string keys = "  enable_cdi = true\n";
  if (!cri.has_cdi_dirs) keys += "  cdi_spec_dirs = " + toml::string_array(cdi.spec_dirs) + "\n";
  std::string text = cri.text;
  if (!cri.enable_cdi_raw.empty()) return text.replace(cri.enable_cdi_at, cri.enable_cdi_raw.size(), keys);
  if (cri.root_at != std::string::npos) return text.insert(cri.root_at, keys);
  extra_table = text::cat("\n[", toml::key_path_text(cri_path(version)), "]\n", keys);
  return text;
}

}  // namespace

std::string render_drop_in(const CriSection& cri, int version, const std::string& runtime_path, const CdiWanted& cdi) {
  const std::string plugin = toml::key_path_text(cri_path(version));
  std::string extra_table;
  const std::string tables = cri_text(cri, version, cdi, extra_table);
  std::string out = text::cat(
      "# The runtime handler \"", kRuntimeName,
      "\" (gpufrac-runtime), written by `gpufrac runtime configure containerd`.\n",
      "# containerd before 2.1 takes a plugin's settings from the last file that sets the plugin, so this file\n");
  if (cri.source.empty())
    out += "# keeps runc, which containerd would otherwise drop; no file before it sets the CRI plugin.\n";
  else
    out += "# repeats the CRI plugin settings of " + cri.source + ": run the command again after changing them.\n";
  out += text::cat("version = ", version, "\n");
  if (!tables.empty()) out += "\n" + tables;
  out += extra_table;
  if (!cri.has_runc && cri.default_runtime == "runc")
    out += text::cat("\n[", plugin, ".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n");
  out += text::cat(
      "\n[", plugin, ".containerd.runtimes.", kRuntimeName, "]\n", "  runtime_type = \"io.containerd.runc.v2\"\n",
      "  pod_annotations = ", toml::string_array(pod_annotations()), "\n",
      "  container_annotations = ", toml::string_array(container_annotations()), "\n", "\n[", plugin,
      ".containerd.runtimes.", kRuntimeName, ".options]\n", "  BinaryName = ", toml::quote(runtime_path), "\n");
  for (const auto& o : cri.runc_options) out += "  " + o + "\n";
  return out;
}

}  // namespace gpufrac::engine_config::detail
