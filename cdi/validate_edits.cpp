// The rules on containerEdits (container-edits.go Validate, plus absolute paths).
#include <array>
#include <set>

#include "cdi/validate.hpp"
#include "core/text.hpp"

namespace gpufrac::cdi::detail {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 6> kHookNames{"prestart",       "createRuntime", "createContainer",
                                                     "startContainer", "poststart",     "poststop"};

struct Ctx {
  std::vector<Problem>& out;
  void error(const std::string& where, std::string message) {
    out.push_back({Severity::error, where, std::move(message)});
  }
};

// The string at obj[key] ("" when absent or not a string: the field check reports types).
std::string str(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}
bool has(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}
const Json* list(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? &*it : nullptr;
}

void env_rule(Ctx& c, const Json& obj, const std::string& where) {
  const Json* env = list(obj, "env");
  if (env == nullptr) return;
  for (std::size_t i = 0; i < env->size(); ++i) {
    if (!(*env)[i].is_string()) continue;
    const std::string& e = (*env)[i].get_ref<const std::string&>();
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0)
      c.error(text::cat(where, ".env[", i, "]"), text::quote(e) + " is not KEY=VALUE");
  }
}

// path must be set and absolute (required = the field check already reported it missing).
void absolute_rule(Ctx& c, const Json& obj, const char* key, const std::string& where, bool required) {
  if (!has(obj, key) || !obj.at(key).is_string()) return;
  const std::string p = str(obj, key);
  if (p.empty() && required)
    c.error(where + "." + key, "empty; use an absolute path");
  else if (!p.empty() && p[0] != '/')
    c.error(where + "." + key, text::quote(p) + " is not an absolute path");
}

void device_node_rules(Ctx& c, const Json& d, const std::string& where) {
  absolute_rule(c, d, "path", where, true);
  absolute_rule(c, d, "hostPath", where, false);
  const std::string type = str(d, "type");
  if (!(type.empty() || type == "b" || type == "c" || type == "u" || type == "p"))
    c.error(where + ".type", text::quote(type) + " is not a device type; use b, c, u or p, or leave it out");
  for (const char* key : {"major", "minor"}) {
    auto it = d.find(key);
    if (it != d.end() && it->is_number_integer() && !it->is_number_unsigned() && it->get<std::int64_t>() < 0)
      c.error(where + "." + key, text::cat(it->get<std::int64_t>(), " is negative; use a device number >= 0"));
  }
  const std::string perms = str(d, "permissions");
  if (perms != "none" && perms.find_first_not_of("rwm") != std::string::npos)
    c.error(where + ".permissions", text::quote(perms) + " is not a subset of rwm; use r, w and m (e.g. rw), or none");
}

void mount_rules(Ctx& c, const Json& m, const std::string& where) {
  absolute_rule(c, m, "containerPath", where, true);
  const std::string type = str(m, "type");
  const bool bind = type.empty() || type == "bind" || type == "rbind";
  if (has(m, "hostPath") && str(m, "hostPath").empty()) c.error(where + ".hostPath", "empty; use an absolute path");
  if (bind && !str(m, "hostPath").empty() && str(m, "hostPath")[0] != '/')
    c.error(where + ".hostPath", text::quote(str(m, "hostPath")) + " is not an absolute path; a bind mount needs one");
}

void hook_rules(Ctx& c, const Json& h, const std::string& where) {
  if (has(h, "hookName") && h.at("hookName").is_string()) {
    const std::string name = str(h, "hookName");
    bool known = false;
    for (auto n : kHookNames) known = known || n == name;
    if (!known)
      c.error(where + ".hookName", text::quote(name) +
                                       " is not a hook name; use prestart, createRuntime, createContainer, "
                                       "startContainer, poststart or poststop");
  }
  absolute_rule(c, h, "path", where, true);
  env_rule(c, h, where);
  auto t = h.find("timeout");
  if (t != h.end() && t->is_number_integer() && !t->is_number_unsigned() && t->get<std::int64_t>() <= 0)
    c.error(where + ".timeout",
            text::cat(t->get<std::int64_t>(), " is not positive; use seconds > 0, or leave it out"));
}

void intel_rdt_rules(Ctx& c, const Json& edits, const std::string& where) {
  auto it = edits.find("intelRdt");
  if (it == edits.end() || !it->is_object()) return;
  const std::string id = str(*it, "closID");
  if (id == "/") return;
  if (id.size() >= 4096 || id == "." || id == ".." || id.find_first_of("/\n") != std::string::npos)
    c.error(where + ".intelRdt.closID", text::quote(id) + " is not a closID; use a file name, or / for the root class");
}

void net_device_rules(Ctx& c, const Json& edits, const std::string& where) {
  const Json* devs = list(edits, "netDevices");
  if (devs == nullptr) return;
  std::set<std::string> hosts, names;
  for (std::size_t i = 0; i < devs->size(); ++i) {
    const Json& d = (*devs)[i];
    if (!d.is_object()) continue;
    const std::string loc = text::cat(where, ".netDevices[", i, "]");
    for (const char* key : {"hostInterfaceName", "name"}) {
      const std::string v = str(d, key);
      if (has(d, key) && v.empty()) c.error(loc + "." + key, "empty; use an interface name");
      auto& seen = std::string_view(key) == "name" ? names : hosts;
      if (!v.empty() && !seen.insert(v).second) c.error(loc + "." + key, text::quote(v) + " appears twice");
    }
  }
}

template <class Fn>
void each(Ctx& c, const Json& edits, const char* key, const std::string& where, Fn fn) {
  const Json* items = list(edits, key);
  if (items == nullptr) return;
  for (std::size_t i = 0; i < items->size(); ++i)
    if ((*items)[i].is_object()) fn(c, (*items)[i], text::cat(where, ".", key, "[", i, "]"));
}

}  // namespace

void check_edits(const Json& edits, const std::string& where, std::vector<Problem>& out) {
  if (!edits.is_object()) return;
  Ctx c{out};
  env_rule(c, edits, where);
  each(c, edits, "deviceNodes", where, device_node_rules);
  each(c, edits, "mounts", where, mount_rules);
  each(c, edits, "hooks", where, hook_rules);
  intel_rdt_rules(c, edits, where);
  net_device_rules(c, edits, where);
}

}  // namespace gpufrac::cdi::detail
