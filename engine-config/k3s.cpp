#include "engine-config/k3s.hpp"

#include "core/fs.hpp"
#include "core/text.hpp"
#include "engine-config/containerd_section.hpp"
#include "engine-config/toml_lite.hpp"

namespace gpufrac::engine_config {

namespace {

// The handler's tables for a config version, between the marker lines.
std::string handler_block(int version, const std::string& runtime_path, const detail::CriSection& cri) {
  const std::string plugin = toml::key_path_text(detail::cri_path(version));
  std::string out = text::cat(
      kK3sBegin, "[", plugin, ".containerd.runtimes.", kRuntimeName, "]\n",
      "  runtime_type = \"io.containerd.runc.v2\"\n", "  pod_annotations = ", toml::string_array(pod_annotations()),
      "\n", "  container_annotations = ", toml::string_array(container_annotations()), "\n", "[", plugin,
      ".containerd.runtimes.", kRuntimeName, ".options]\n", "  BinaryName = ", toml::quote(runtime_path), "\n");
  for (const auto& o : cri.runc_options) out += "  " + o + "\n";
  return out + kK3sEnd;
}

// The template's text without a block of ours (and the newline before it that we added).
std::string without_block(const std::string& text) {
  const auto begin = text.find(kK3sBegin);
  if (begin == std::string::npos) return text;
  auto end = text.find(kK3sEnd, begin);
  end = end == std::string::npos ? text.size() : end + std::string(kK3sEnd).size();
  std::size_t from = begin;
  if (from > 0 && text[from - 1] == '\n' && (from == 1 || text[from - 2] == '\n')) --from;
  return text.substr(0, from) + text.substr(end);
}

// The line saying that the rendered config leaves CDI off (containerd 1.7 defaults enable_cdi to
// false, 2.x to true), or "" when it is on.
std::string cdi_off_warning(const SourceFile& rendered, int version, const detail::CriSection& cri) {
  const bool on = cri.enable_cdi.value_or(version >= 3);
  if (on) return "";
  const std::string plugin = toml::key_path_text(detail::cri_path(version));
  return text::cat(rendered.path, ": CDI is off (enable_cdi is ", cri.enable_cdi ? "false" : "unset", " under [",
                   plugin, "]", version < 3 ? ", containerd 1.7's default" : "",
                   "): the gpufrac handler works, CDI devices and gpufrac-dra do not; set enable_cdi = true there ",
                   "in a config.toml.tmpl that copies k3s's base template, or run a k3s (or RKE2) with containerd 2.x");
}

}  // namespace

std::string k3s_rendered_config(bool rke2) {
  return text::cat("/var/lib/rancher/", rke2 ? "rke2" : "k3s", "/agent/etc/containerd/config.toml");
}

std::string k3s_template_path(const std::string& rendered_path, int version, bool v3_exists, bool v2_exists) {
  const std::string dir = fs::dirname(rendered_path);
  if (version >= 3 && v3_exists) return dir + "/config-v3.toml.tmpl";
  if (v2_exists) return dir + "/config.toml.tmpl";
  return dir + (version >= 3 ? "/config-v3.toml.tmpl" : "/config.toml.tmpl");
}

Result<int> k3s_rendered_version(const SourceFile& rendered) {
  if (!rendered.text)
    return user_error(rendered.path + ": missing; start k3s (or RKE2) once so that it renders its containerd config");
  auto doc = toml::parse(*rendered.text, rendered.path);
  if (!doc) return std::unexpected(doc.error());
  for (const auto& s : *doc)
    if (s.kind == toml::StatementKind::key_value && s.table.empty() && s.key == toml::KeyPath{"version"}) {
      auto v = toml::integer_value(s.value);
      if (v && (*v == 2 || *v == 3)) return static_cast<int>(*v);
      return user_error(text::cat(rendered.path, ":", s.line, ": version ", text::quote(s.value),
                                  " is not supported; k3s renders version 2 (containerd 1.7) or 3 (2.x)"));
    }
  return user_error(rendered.path + ": no version; k3s renders version 2 (containerd 1.7) or 3 (2.x)");
}

Result<Plan> plan_k3s(const SourceFile& rendered, const SourceFile& tmpl, const std::string& runtime_path) {
  auto version = k3s_rendered_version(rendered);
  if (!version) return std::unexpected(version.error());
  auto doc = toml::parse(*rendered.text, rendered.path);
  if (!doc) return std::unexpected(doc.error());
  auto cri = detail::extract_cri(*doc, rendered.path, *version);
  if (!cri) return std::unexpected(cri.error());
  const std::string block = handler_block(*version, runtime_path, *cri);
  std::string after;
  if (!tmpl.text) {
    after = "{{ template \"base\" . }}\n\n" + block;
  } else {
    after = without_block(*tmpl.text);
    if (!after.empty() && after.back() != '\n') after.push_back('\n');
    after += "\n" + block;
  }
  Plan plan;
  plan.files.push_back({tmpl.path, tmpl.text, std::move(after)});
  plan.reload = "restart k3s (or RKE2) to render it: systemctl restart k3s";
  if (auto w = cdi_off_warning(rendered, *version, *cri); !w.empty()) plan.warnings.push_back(std::move(w));
  return plan;
}

}  // namespace gpufrac::engine_config
