#include "bundle/oci.hpp"

#include <sys/stat.h>

#include "core/fs.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/spec/spec_scan.hpp"
#include "core/spec/strict_json.hpp"
#include "core/text.hpp"

namespace gpufrac::bundle {

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

// The readers below take either DOM: nlohmann::json (the hook) or ordered_json (the wrapper).
template <class Json>
Result<> read_namespaces(const Json& linux_obj, BundleSpec& spec) {
  if (!linux_obj.contains("namespaces")) return {};
  const Json& ns = linux_obj["namespaces"];
  if (!ns.is_array()) return user_error("config.json: linux.namespaces must be a list");
  for (const auto& n : ns) {
    if (!n.is_object() || n.value("type", Json()) != "pid") continue;
    std::string path = n.contains("path") && n["path"].is_string() ? n["path"].template get<std::string>() : "";
    if (path.empty())
      spec.private_pid_namespace = true;
    else
      spec.pid_namespace_path = path;
  }
  return {};
}

template <class Json>
std::string string_field(const Json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].template get<std::string>() : "";
}

// What the spec already mounts, the devices it lists and the hooks it runs (driver injection looks
// for NVIDIA's edits there, and for GPUs gpufrac did not grant).
template <class Json>
void read_edits(const Json& j, BundleSpec& spec) {
  if (j.contains("mounts") && j["mounts"].is_array())
    for (const auto& m : j["mounts"]) {
      spec.mount_destinations.push_back(string_field(m, "destination"));
      if (spec.mount_destinations.back() == "/etc/ld.so.preload") spec.preload_source = string_field(m, "source");
    }
  if (j.contains("linux") && j["linux"].is_object() && j["linux"].contains("devices") &&
      j["linux"]["devices"].is_array())
    for (const auto& d : j["linux"]["devices"]) spec.device_paths.push_back(string_field(d, "path"));
  if (!j.contains("hooks") || !j["hooks"].is_object()) return;
  for (const auto& [stage, list] : j["hooks"].items()) {
    if (!list.is_array()) continue;
    for (const auto& h : list) {
      SpecHook hook{string_field(h, "path"), {}};
      if (h.is_object() && h.contains("args") && h["args"].is_array())
        for (const auto& a : h["args"])
          if (a.is_string()) hook.args.push_back(a.template get<std::string>());
      spec.hooks.push_back(std::move(hook));
    }
  }
}

}  // namespace

namespace {

// Whether the namespace at `path` is the one at `reference`; an unreadable link is an error, not an
// answer, so a missing permission never reads as "the container has its own PID namespace".
Result<bool> same_namespace(const std::string& path, const std::string& reference) {
  struct stat sa {
  }, sb{};
  if (::stat(path.c_str(), &sa) != 0) return sys_error("cannot read the PID namespace " + path + " in config.json");
  if (::stat(reference.c_str(), &sb) != 0) return sys_error("cannot read the host PID namespace " + reference);
  return sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

}  // namespace

Result<> check_host_pid(const BundleSpec& spec, bool require_host_pid, const std::string& proc_root) {
  if (!require_host_pid) return {};
  bool own = spec.private_pid_namespace;
  if (!own && spec.pid_namespace_path) {
    auto same = same_namespace(*spec.pid_namespace_path, proc_root + "/self/ns/pid");
    if (!same) return std::unexpected(same.error());
    own = !*same;
  }
  if (!own) return {};
  return user_error(
      "the container has its own PID namespace; gpufrac needs the host PID namespace: run it with --pid=host "
      "(podman, docker, nerdctl; pid: host in a compose file) or hostPID: true (Kubernetes), or set "
      "require-host-pid: false in the config");
}

Result<OciState> parse_oci_state(std::string_view text) {
  auto parsed = parse_strict_json(text, "OCI state on stdin", {.max_bytes = kMaxStateBytes});
  if (!parsed) return std::unexpected(parsed.error());
  const json& j = *parsed;
  if (!j.is_object()) return user_error("OCI state on stdin is not a JSON object");
  OciState s;
  if (!j.contains("id") || !j["id"].is_string()) return user_error("OCI state: missing string field id");
  s.id = j["id"].get<std::string>();
  if (auto r = validate_container_id(s.id); !r) return std::unexpected(r.error());
  for (const char* key : {"bundle", "bundlePath"})
    if (j.contains(key) && j[key].is_string()) s.bundle = j[key].get<std::string>();
  if (s.bundle.empty() || s.bundle.front() != '/') return user_error("OCI state: missing absolute bundle path");
  s.pid = pid_of(j);
  return s;
}

Result<BundleSpec> parse_bundle_spec(std::string_view config_json, const std::string& bundle) {
  auto parsed = parse_strict_json(config_json, bundle + "/config.json", {.max_bytes = kMaxConfigBytes});
  if (!parsed) return std::unexpected(parsed.error());
  return bundle_spec_from(*parsed, bundle);
}

namespace {

template <class Json>
Result<BundleSpec> read_bundle_spec(const Json& j, const std::string& bundle) {
  if (!j.is_object()) return user_error(bundle + "/config.json: not a JSON object");
  BundleSpec spec;
  if (j.contains("annotations") && j["annotations"].is_object())
    for (const auto& [k, v] : j["annotations"].items())
      if (v.is_string()) spec.annotations[k] = v.template get<std::string>();
  if (j.contains("process") && j["process"].is_object() && j["process"].contains("env") &&
      j["process"]["env"].is_array())
    for (const auto& e : j["process"]["env"])
      if (e.is_string()) spec.env.push_back(e.template get<std::string>());
  const bool has_root = j.contains("root") && j["root"].is_object() && j["root"].contains("path");
  if (has_root && !j["root"]["path"].is_string())
    return user_error(bundle + "/config.json: root.path is not a string; a path such as \"rootfs\"");
  const std::string root = has_root ? j["root"]["path"].template get<std::string>() : "";
  if (root.empty()) return user_error(bundle + "/config.json: missing root.path");
  spec.rootfs = root.front() == '/' ? root : bundle + "/" + root;
  spec.read_only_root = j["root"].contains("readonly") && j["root"]["readonly"].is_boolean() &&
                        j["root"]["readonly"].template get<bool>();
  read_edits(j, spec);
  if (j.contains("linux") && j["linux"].is_object()) {
    const Json& l = j["linux"];
    if (auto r = read_namespaces(l, spec); !r) return std::unexpected(r.error());
    if (l.contains("resources") && l["resources"].is_object() && l["resources"].contains("devices"))
      spec.device_rules = json(l["resources"]["devices"]);
  }
  return spec;
}

}  // namespace

Result<BundleSpec> bundle_spec_from(const json& j, const std::string& bundle) {
  return read_bundle_spec(j, bundle);
}

Result<BundleSpec> bundle_spec_from(const nlohmann::ordered_json& j, const std::string& bundle) {
  return read_bundle_spec(j, bundle);
}

Result<BundleConfig> load_bundle_config(const std::string& bundle, Scan scan) {
  BundleConfig c;
  c.bundle = bundle;
  auto text = fs::read_file(bundle + "/config.json", kMaxConfigBytes);
  if (!text) {
    Error e = text.error();
    e.kind = ErrorKind::user;
    return std::unexpected(std::move(e));
  }
  c.text = std::move(*text);
  if (scan == Scan::when_named && !may_name_gpufrac(c.text)) {
    c.checked = false;
    return c;
  }
  // The same strings bundle_spec_from takes: annotations.<key> and process.env[<i>].
  const JsonStringVisitor strings = [&](const std::vector<JsonPathStep>& p, const std::string& value) {
    if (p.size() == 2 && p[0].object && p[0].key == "annotations" && p[1].object)
      c.request_fields.annotations[std::string(p[1].key)] = value;
    else if (p.size() == 3 && p[0].object && p[0].key == "process" && p[1].object && p[1].key == "env" && !p[2].object)
      c.request_fields.env.push_back(value);
  };
  if (auto r = check_strict_json(c.text, bundle + "/config.json", {.max_bytes = kMaxConfigBytes}, &strings); !r)
    return std::unexpected(r.error());
  return c;
}

Result<BundleSpec> BundleConfig::full() const {
  if (!checked) return internal_error(bundle + "/config.json was not checked (Scan::when_named)");
  return bundle_spec_from(nlohmann::json::parse(text), bundle);  // checked strictly at load
}

}  // namespace gpufrac::bundle
