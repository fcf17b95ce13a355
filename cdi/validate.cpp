#include "cdi/validate.hpp"

#include <map>

#include "cdi/cdi_names.hpp"
#include "cdi/version.hpp"
#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

using Json = nlohmann::ordered_json;

const Json* member(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

void version_rules(const Json& spec, std::vector<Problem>& out) {
  const Json* v = member(spec, "cdiVersion");
  if (v == nullptr || !v->is_string()) return;
  const std::string declared_text = v->get<std::string>();
  auto declared = known_version(declared_text);
  if (!declared) {
    out.push_back({Severity::error, "cdiVersion",
                   text::quote(declared_text) + " is not a CDI version; use one of " + known_version_list()});
    return;
  }
  VersionNeed need = required_version(spec);
  if (compare_versions(need.version, *declared) > 0) {
    out.push_back({Severity::error, "cdiVersion",
                   text::cat(text::quote(declared_text), " is older than ", need.version, ", which ", need.location,
                             " needs (", need.feature, ")")});
    return;
  }
  if (compare_versions(*declared, kPodman431Version) <= 0) return;
  std::string tail = compare_versions(need.version, kPodman431Version) <= 0
                         ? text::cat("this spec needs only ", need.version)
                         : text::cat("this spec needs ", need.version, " for ", need.location, " (", need.feature, ")");
  out.push_back({Severity::warning, "cdiVersion",
                 text::cat(text::quote(declared_text), " is newer than ", kPodman431Version,
                           ", the newest podman 4.3.1 (CDI library v0.5.2) reads; ", tail)});
}

void kind_rule(const Json& spec, std::vector<Problem>& out) {
  const Json* k = member(spec, "kind");
  if (k == nullptr || !k->is_string()) return;
  const std::string kind = k->get<std::string>();
  auto slash = kind.find('/');
  std::string problem =
      slash == std::string::npos ? std::string("it has no '/'") : vendor_problem(kind.substr(0, slash));
  if (problem.empty()) problem = class_problem(kind.substr(slash + 1));
  if (!problem.empty())
    out.push_back({Severity::error, "kind", text::cat(text::quote(kind), ": ", problem, "; use ", kKindForm)});
}

bool empty_edits(const Json& device) {
  const Json* e = member(device, "containerEdits");
  if (e == nullptr || !e->is_object()) return false;  // missing or mistyped: the field check says so
  for (auto it = e->begin(); it != e->end(); ++it) {
    const Json& v = it.value();
    if (v.is_null()) continue;
    if (it.key() == "intelRdt" || !(v.is_array() || v.is_object()) || !v.empty()) return false;
  }
  return true;
}

void device_rules(const Json& spec, std::vector<Problem>& out) {
  const Json* devices = member(spec, "devices");
  if (devices == nullptr || !devices->is_array()) return;
  if (devices->empty()) out.push_back({Severity::error, "devices", "empty; a spec needs at least one device"});
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < devices->size(); ++i) {
    const Json& d = (*devices)[i];
    if (!d.is_object()) continue;
    const std::string where = text::cat("devices[", i, "]");
    if (const Json* n = member(d, "name"); n != nullptr && n->is_string()) {
      const std::string name = n->get<std::string>();
      if (std::string problem = device_name_problem(name); !problem.empty())
        out.push_back({Severity::error, where + ".name",
                       text::cat(text::quote(name), " is not a device name: ", problem, "; use ", kDeviceNameForm)});
      else if (auto [it, fresh] = seen.emplace(name, i); !fresh)
        out.push_back({Severity::error, where + ".name",
                       text::cat(text::quote(name), " is also devices[", it->second, "].name; names must be unique")});
    }
    if (empty_edits(d))
      out.push_back({Severity::error, where + ".containerEdits",
                     "empty; a device needs at least one of env, deviceNodes, mounts, hooks, intelRdt, "
                     "additionalGids, netDevices"});
    if (const Json* e = member(d, "containerEdits")) detail::check_edits(*e, where + ".containerEdits", out);
  }
}

}  // namespace

std::vector<Problem> validate_spec(const Json& spec) {
  std::vector<Problem> out;
  if (spec.is_null())
    return {{Severity::error, "", "the spec is empty; a spec is a map with cdiVersion, kind and devices"}};
  detail::check_fields(spec, ObjectKind::spec, "", out);
  if (!spec.is_object()) return out;
  version_rules(spec, out);
  kind_rule(spec, out);
  if (const Json* e = member(spec, "containerEdits")) detail::check_edits(*e, "containerEdits", out);
  device_rules(spec, out);
  return out;
}

std::string format_problem(const Problem& p) {
  std::string head = p.location.empty() ? std::string() : p.location + ": ";
  return head + (p.severity == Severity::warning ? "warning: " : "") + p.message;
}

bool has_errors(const std::vector<Problem>& problems) {
  for (const auto& p : problems)
    if (p.severity == Severity::error) return true;
  return false;
}

}  // namespace gpufrac::cdi
