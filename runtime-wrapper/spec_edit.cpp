#include "runtime-wrapper/spec_edit.hpp"

#include <algorithm>

#include "core/fs.hpp"
#include "core/request/request.hpp"

namespace gpufrac::wrapper {

namespace {

using Kind = nlohmann::json::value_t;

// parent[key] as an object or array, created when absent; a value of another type is an error.
Result<Spec*> member(Spec& parent, const char* key, Kind kind, const std::string& field) {
  if (!parent.contains(key)) parent[key] = kind == Kind::array ? Spec::array() : Spec::object();
  Spec& v = parent[key];
  if (v.type() != kind)
    return user_error("config.json: " + field + " must be " + (kind == Kind::array ? "a list" : "an object"));
  return &v;
}

Result<> add_env(Spec& spec, const std::vector<std::string>& env) {
  if (env.empty()) return {};
  auto process = member(spec, "process", Kind::object, "process");
  if (!process) return std::unexpected(process.error());
  auto list = member(**process, "env", Kind::array, "process.env");
  if (!list) return std::unexpected(list.error());
  for (const auto& kv : env) {
    const std::string key = kv.substr(0, kv.find('=') + 1);
    auto& a = **list;
    a.erase(std::remove_if(a.begin(), a.end(),
                           [&](const Spec& e) { return e.is_string() && e.get<std::string>().starts_with(key); }),
            a.end());
    a.push_back(kv);
  }
  return {};
}

Spec device_json(const EditDeviceNode& d) {
  Spec j = {{"path", d.path}, {"type", std::string(1, d.type)}, {"major", d.major}, {"minor", d.minor}};
  if (d.file_mode) j["fileMode"] = *d.file_mode;
  j["uid"] = 0;
  j["gid"] = 0;
  return j;
}

Spec allow_json(const EditDeviceNode& d) {
  return {{"allow", true},
          {"type", std::string(1, d.type)},
          {"major", d.major},
          {"minor", d.minor},
          {"access", d.permissions}};
}

Result<> add_devices(Spec& spec, const std::vector<EditDeviceNode>& nodes) {
  if (nodes.empty()) return {};
  auto linux_obj = member(spec, "linux", Kind::object, "linux");
  if (!linux_obj) return std::unexpected(linux_obj.error());
  // Both members exist before any pointer into `linux` is kept: inserting into the ordered map
  // moves its elements, so a pointer taken before the second insert would dangle.
  if (auto r = member(**linux_obj, "resources", Kind::object, "linux.resources"); !r) return std::unexpected(r.error());
  auto devices = member(**linux_obj, "devices", Kind::array, "linux.devices");
  if (!devices) return std::unexpected(devices.error());
  auto resources = member(**linux_obj, "resources", Kind::object, "linux.resources");
  if (!resources) return std::unexpected(resources.error());
  auto rules = member(**resources, "devices", Kind::array, "linux.resources.devices");
  if (!rules) return std::unexpected(rules.error());
  for (const auto& d : nodes) {
    auto& list = **devices;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const Spec& e) { return e.is_object() && e.value("path", Spec()) == d.path; }),
               list.end());
    list.push_back(device_json(d));
    Spec rule = allow_json(d);
    if (std::find((*rules)->begin(), (*rules)->end(), rule) == (*rules)->end()) (*rules)->push_back(std::move(rule));
  }
  return {};
}

Spec mount_json(const EditMount& m) {
  const std::string type = m.type.empty() ? "bind" : m.type;
  std::vector<std::string> options = m.options;
  bool binds = std::find(options.begin(), options.end(), "bind") != options.end() ||
               std::find(options.begin(), options.end(), "rbind") != options.end();
  if (type == "bind" && !binds) options.push_back("rbind");
  return {{"destination", m.container_path}, {"type", type}, {"source", m.host_path}, {"options", options}};
}

Result<> add_mounts(Spec& spec, const std::vector<EditMount>& mounts) {
  if (mounts.empty()) return {};
  auto list = member(spec, "mounts", Kind::array, "mounts");
  if (!list) return std::unexpected(list.error());
  for (const auto& m : mounts) (*list)->push_back(mount_json(m));
  return {};
}

Result<> add_hooks(Spec& spec, const std::vector<EditHook>& hooks) {
  if (hooks.empty()) return {};
  auto all = member(spec, "hooks", Kind::object, "hooks");
  if (!all) return std::unexpected(all.error());
  for (const auto& h : hooks) {
    auto stage = member(**all, h.hook_name.c_str(), Kind::array, "hooks." + h.hook_name);
    if (!stage) return std::unexpected(stage.error());
    Spec j = {{"path", h.path}, {"args", h.args}, {"env", h.env}};
    if (h.timeout) j["timeout"] = *h.timeout;
    (*stage)->push_back(std::move(j));
  }
  return {};
}

bool is_our_hook(const Spec& hook, const std::string& hook_path) {
  if (!hook.is_object() || !hook.contains("path") || !hook["path"].is_string()) return false;
  const std::string path = hook["path"].get<std::string>();
  return path == hook_path || fs::basename(path) == "gpufrac-hook";
}

}  // namespace

bool already_injected(const Spec& spec, const std::string& hook_path) {
  if (spec.contains("annotations") && spec["annotations"].is_object() &&
      spec["annotations"].contains(annotation::kInjected))
    return true;
  if (!spec.contains("hooks") || !spec["hooks"].is_object()) return false;
  for (const auto& [stage, list] : spec["hooks"].items()) {
    if (!list.is_array()) continue;
    if (std::any_of(list.begin(), list.end(), [&](const Spec& h) { return is_our_hook(h, hook_path); })) return true;
  }
  return false;
}

Result<> apply_edits(Spec& spec, const Edits& edits) {
  if (!spec.is_object()) return user_error("config.json: not a JSON object");
  if (auto r = add_env(spec, edits.env); !r) return r;
  if (auto r = add_devices(spec, edits.device_nodes); !r) return r;
  if (auto r = add_mounts(spec, edits.mounts); !r) return r;
  if (auto r = add_hooks(spec, edits.hooks); !r) return r;
  auto annotations = member(spec, "annotations", Kind::object, "annotations");
  if (!annotations) return std::unexpected(annotations.error());
  (**annotations)[annotation::kInjected] = kInjectedValue;
  return {};
}

}  // namespace gpufrac::wrapper
