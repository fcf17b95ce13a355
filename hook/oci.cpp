#include "hook/oci.hpp"

#include <cctype>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::hook {

using nlohmann::json;

namespace {

std::optional<pid_t> pid_of(const json& j) {
  if (!j.contains("pid")) return std::nullopt;
  const json& p = j["pid"];
  std::optional<std::uint64_t> v;
  if (p.is_number_unsigned()) v = p.get<std::uint64_t>();
  if (p.is_number_integer() && p.get<std::int64_t>() > 0) v = static_cast<std::uint64_t>(p.get<std::int64_t>());
  if (p.is_string()) v = text::parse_u64(p.get<std::string>());
  if (!v || *v == 0 || *v > 4194304) return std::nullopt;
  return static_cast<pid_t>(*v);
}

Result<> read_namespaces(const json& linux_obj, BundleSpec& spec) {
  if (!linux_obj.contains("namespaces")) return {};
  const json& ns = linux_obj["namespaces"];
  if (!ns.is_array()) return user_error("config.json: linux.namespaces must be a list");
  for (const auto& n : ns) {
    if (!n.is_object() || n.value("type", "") != "pid") continue;
    std::string path = n.contains("path") && n["path"].is_string() ? n["path"].get<std::string>() : "";
    if (path.empty())
      spec.private_pid_namespace = true;
    else
      spec.pid_namespace_path = path;
  }
  return {};
}

}  // namespace

Result<> check_container_id(std::string_view id) {
  bool ok = !id.empty() && id.size() <= 128 && id != "." && id != "..";
  for (char c : id) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  if (!ok || id.front() == '.' || id.front() == '-')
    return user_error("container id " + text::quote(id) + " is not accepted; use 1-128 of [A-Za-z0-9_.-], not starting with . or -");
  return {};
}

Result<OciState> parse_oci_state(std::string_view text) {
  if (text.size() > kMaxStateBytes) return user_error("OCI state on stdin is larger than 16 MiB");
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return user_error("OCI state on stdin is not a JSON object");
  OciState s;
  if (!j.contains("id") || !j["id"].is_string()) return user_error("OCI state: missing string field id");
  s.id = j["id"].get<std::string>();
  if (auto r = check_container_id(s.id); !r) return std::unexpected(r.error());
  for (const char* key : {"bundle", "bundlePath"})
    if (j.contains(key) && j[key].is_string()) s.bundle = j[key].get<std::string>();
  if (s.bundle.empty() || s.bundle.front() != '/') return user_error("OCI state: missing absolute bundle path");
  s.pid = pid_of(j);
  return s;
}

Result<BundleSpec> parse_bundle_spec(std::string_view config_json, const std::string& bundle) {
  json j = json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return user_error(bundle + "/config.json: not a JSON object");
  BundleSpec spec;
  if (j.contains("annotations") && j["annotations"].is_object())
    for (const auto& [k, v] : j["annotations"].items())
      if (v.is_string()) spec.annotations[k] = v.get<std::string>();
  std::string root = j.contains("root") && j["root"].is_object() ? j["root"].value("path", "") : "";
  if (root.empty()) return user_error(bundle + "/config.json: missing root.path");
  spec.rootfs = root.front() == '/' ? root : bundle + "/" + root;
  if (j.contains("linux") && j["linux"].is_object()) {
    const json& l = j["linux"];
    if (auto r = read_namespaces(l, spec); !r) return std::unexpected(r.error());
    if (l.contains("resources") && l["resources"].is_object() && l["resources"].contains("devices"))
      spec.device_rules = l["resources"]["devices"];
  }
  return spec;
}

Result<BundleSpec> load_bundle_spec(const std::string& bundle) {
  auto text = fs::read_file(bundle + "/config.json", kMaxConfigBytes);
  if (!text) {
    Error e = text.error();
    e.kind = ErrorKind::user;
    return std::unexpected(std::move(e));
  }
  return parse_bundle_spec(*text, bundle);
}

}  // namespace gpufrac::hook
