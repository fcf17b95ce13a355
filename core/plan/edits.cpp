#include "core/plan/edits.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace gpufrac {

void Edits::merge(const Edits& o) {
  for (const auto& e : o.env)
    if (std::find(env.begin(), env.end(), e) == env.end()) env.push_back(e);
  for (const auto& d : o.device_nodes) {
    auto same_path = [&](const EditDeviceNode& x) { return x.path == d.path; };
    if (std::none_of(device_nodes.begin(), device_nodes.end(), same_path)) device_nodes.push_back(d);
  }
  for (const auto& m : o.mounts)
    if (std::find(mounts.begin(), mounts.end(), m) == mounts.end()) mounts.push_back(m);
  for (const auto& h : o.hooks)
    if (std::find(hooks.begin(), hooks.end(), h) == hooks.end()) hooks.push_back(h);
}

namespace {

nlohmann::json node_json(const EditDeviceNode& d) {
  nlohmann::json j = {{"path", d.path}};
  if (!d.host_path.empty() && d.host_path != d.path) j["hostPath"] = d.host_path;
  j["type"] = std::string(1, d.type);
  j["major"] = d.major;
  j["minor"] = d.minor;
  if (d.file_mode) j["fileMode"] = *d.file_mode;
  if (d.permissions != "rwm") j["permissions"] = d.permissions;
  return j;
}

nlohmann::json mount_json(const EditMount& m) {
  nlohmann::json j = {{"hostPath", m.host_path}, {"containerPath", m.container_path}};
  if (!m.options.empty()) j["options"] = m.options;
  if (!m.type.empty()) j["type"] = m.type;
  return j;
}

nlohmann::json hook_json(const EditHook& h) {
  nlohmann::json j = {{"hookName", h.hook_name}, {"path", h.path}};
  if (!h.args.empty()) j["args"] = h.args;
  if (!h.env.empty()) j["env"] = h.env;
  if (h.timeout) j["timeout"] = *h.timeout;
  return j;
}

}  // namespace

nlohmann::json to_cdi_json(const Edits& e) {
  nlohmann::json j = nlohmann::json::object();
  if (!e.env.empty()) j["env"] = e.env;
  auto list = [](const auto& items, auto fn) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& i : items) a.push_back(fn(i));
    return a;
  };
  if (!e.device_nodes.empty()) j["deviceNodes"] = list(e.device_nodes, node_json);
  if (!e.mounts.empty()) j["mounts"] = list(e.mounts, mount_json);
  if (!e.hooks.empty()) j["hooks"] = list(e.hooks, hook_json);
  return j;
}

}  // namespace gpufrac
