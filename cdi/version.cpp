#include "cdi/version.hpp"

#include <array>
#include <functional>
#include <vector>

#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 10> kKnown{"0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0",
                                                  "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"};

const Json* member(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

bool non_empty(const Json* v) {
  return v != nullptr && !v->is_null() && !((v->is_array() || v->is_object() || v->is_string()) && v->empty());
}

// Every containerEdits object with its location, spec level first.
std::vector<std::pair<std::string, const Json*>> all_edits(const Json& spec) {
  std::vector<std::pair<std::string, const Json*>> out;
  if (const Json* e = member(spec, "containerEdits")) out.emplace_back("containerEdits", e);
  const Json* devices = member(spec, "devices");
  if (devices == nullptr || !devices->is_array()) return out;
  for (std::size_t i = 0; i < devices->size(); ++i)
    if (const Json* e = member((*devices)[i], "containerEdits"))
      out.emplace_back(text::cat("devices[", i, "].containerEdits"), e);
  return out;
}

// The first item of edits.<list> whose <key> is non-empty: its location.
std::optional<std::string> find_in_lists(const Json& spec, const char* list, const char* key) {
  for (const auto& [where, edits] : all_edits(spec)) {
    const Json* items = member(*edits, list);
    if (items == nullptr || !items->is_array()) continue;
    for (std::size_t i = 0; i < items->size(); ++i)
      if (non_empty(member((*items)[i], key))) return text::cat(where, ".", list, "[", i, "].", key);
  }
  return std::nullopt;
}

std::optional<std::string> find_edit(const Json& spec, const char* key) {
  for (const auto& [where, edits] : all_edits(spec)) {
    const Json* v = member(*edits, key);
    if (v != nullptr && !v->is_null() && (std::string_view(key) == "intelRdt" || non_empty(v)))
      return where + "." + key;
  }
  return std::nullopt;
}

std::optional<std::string> find_intel_rdt_v110(const Json& spec) {
  for (const auto& [where, edits] : all_edits(spec)) {
    const Json* rdt = member(*edits, "intelRdt");
    if (rdt == nullptr) continue;
    const Json* schemata = member(*rdt, "schemata");
    if (schemata != nullptr && !schemata->is_null()) return where + ".intelRdt.schemata";
    const Json* mon = member(*rdt, "enableMonitoring");
    if (mon != nullptr && mon->is_boolean() && mon->get<bool>()) return where + ".intelRdt.enableMonitoring";
  }
  return std::nullopt;
}

std::optional<std::string> find_annotations(const Json& spec) {
  if (non_empty(member(spec, "annotations"))) return std::string("annotations");
  const Json* devices = member(spec, "devices");
  if (devices == nullptr || !devices->is_array()) return std::nullopt;
  for (std::size_t i = 0; i < devices->size(); ++i)
    if (non_empty(member((*devices)[i], "annotations"))) return text::cat("devices[", i, "].annotations");
  return std::nullopt;
}

std::optional<std::string> find_dotted_class(const Json& spec) {
  const Json* kind = member(spec, "kind");
  if (kind == nullptr || !kind->is_string()) return std::nullopt;
  const std::string& k = kind->get_ref<const std::string&>();
  auto slash = k.find('/');
  if (slash != std::string::npos && k.find('.', slash) != std::string::npos) return std::string("kind");
  return std::nullopt;
}

std::optional<std::string> find_digit_name(const Json& spec) {
  const Json* devices = member(spec, "devices");
  if (devices == nullptr || !devices->is_array()) return std::nullopt;
  for (std::size_t i = 0; i < devices->size(); ++i) {
    const Json* name = member((*devices)[i], "name");
    if (name == nullptr || !name->is_string() || name->empty()) continue;
    char c = name->get_ref<const std::string&>()[0];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return text::cat("devices[", i, "].name");
  }
  return std::nullopt;
}

struct Check {
  std::string_view version;
  std::string_view feature;
  std::function<std::optional<std::string>(const Json&)> find;
};

const std::vector<Check>& checks() {
  static const std::vector<Check> c = {
      {"1.1.0", "netDevices", [](const Json& s) { return find_edit(s, "netDevices"); }},
      {"1.1.0", "intelRdt.schemata or intelRdt.enableMonitoring", find_intel_rdt_v110},
      {"0.7.0", "intelRdt", [](const Json& s) { return find_edit(s, "intelRdt"); }},
      {"0.7.0", "additionalGids", [](const Json& s) { return find_edit(s, "additionalGids"); }},
      {"0.6.0", "annotations", find_annotations},
      {"0.6.0", "a '.' in the class", find_dotted_class},
      {"0.5.0", "a device name that does not start with a letter", find_digit_name},
      {"0.5.0", "hostPath", [](const Json& s) { return find_in_lists(s, "deviceNodes", "hostPath"); }},
      {"0.4.0", "a mount type", [](const Json& s) { return find_in_lists(s, "mounts", "type"); }},
  };
  return c;
}

}  // namespace

VersionNeed required_version(const Json& spec) {
  for (const auto& c : checks())
    if (auto where = c.find(spec)) return VersionNeed{std::string(c.version), *where, std::string(c.feature)};
  return VersionNeed{std::string(kEarliestVersion), "", ""};
}

std::optional<std::string> known_version(std::string_view text) {
  if (text.starts_with("v")) text.remove_prefix(1);
  for (auto v : kKnown)
    if (v == text) return std::string(v);
  return std::nullopt;
}

int compare_versions(std::string_view a, std::string_view b) {
  auto index = [](std::string_view v) {
    for (std::size_t i = 0; i < kKnown.size(); ++i)
      if (kKnown[i] == v) return static_cast<int>(i);
    return -1;
  };
  return index(a) - index(b);
}

std::string known_version_list() {
  std::vector<std::string> out(kKnown.begin(), kKnown.end());
  return text::join(out, ", ");
}

}  // namespace gpufrac::cdi
