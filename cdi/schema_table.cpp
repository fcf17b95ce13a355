#include "cdi/schema_table.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace gpufrac::cdi {

namespace {

using FT = FieldType;
using OK = ObjectKind;

constexpr std::array<Field, 5> kSpec{{{"cdiVersion", FT::string, OK::spec, true},
                                      {"kind", FT::string, OK::spec, true},
                                      {"annotations", FT::string_map},
                                      {"containerEdits", FT::object, OK::edits},
                                      {"devices", FT::object_list, OK::device, true}}};
constexpr std::array<Field, 3> kDevice{{{"name", FT::string, OK::spec, true},
                                        {"annotations", FT::string_map},
                                        {"containerEdits", FT::object, OK::edits, true}}};
constexpr std::array<Field, 7> kEdits{{{"env", FT::string_list},
                                       {"deviceNodes", FT::object_list, OK::device_node},
                                       {"mounts", FT::object_list, OK::mount},
                                       {"hooks", FT::object_list, OK::hook},
                                       {"intelRdt", FT::object, OK::intel_rdt},
                                       {"additionalGids", FT::uint32_list},
                                       {"netDevices", FT::object_list, OK::net_device}}};
constexpr std::array<Field, 9> kDeviceNode{{{"path", FT::string, OK::spec, true},
                                            {"hostPath", FT::string},
                                            {"type", FT::string},
                                            {"major", FT::int64},
                                            {"minor", FT::int64},
                                            {"fileMode", FT::uint32},
                                            {"permissions", FT::string},
                                            {"uid", FT::uint32},
                                            {"gid", FT::uint32}}};
constexpr std::array<Field, 4> kMount{{{"hostPath", FT::string, OK::spec, true},
                                       {"containerPath", FT::string, OK::spec, true},
                                       {"type", FT::string},
                                       {"options", FT::string_list}}};
constexpr std::array<Field, 5> kHook{{{"hookName", FT::string, OK::spec, true},
                                      {"path", FT::string, OK::spec, true},
                                      {"args", FT::string_list},
                                      {"env", FT::string_list},
                                      {"timeout", FT::integer}}};
constexpr std::array<Field, 5> kIntelRdt{{{"closID", FT::string},
                                          {"l3CacheSchema", FT::string},
                                          {"memBwSchema", FT::string},
                                          {"schemata", FT::string_list},
                                          {"enableMonitoring", FT::boolean}}};
constexpr std::array<Field, 2> kNetDevice{
    {{"hostInterfaceName", FT::string, OK::spec, true}, {"name", FT::string, OK::spec, true}}};

template <class Json>
nlohmann::ordered_json order(const Json& value, ObjectKind kind);

template <class Json>
nlohmann::ordered_json order_child(const Json& value, const Field* f) {
  if (f == nullptr || (f->type != FT::object && f->type != FT::object_list)) return nlohmann::ordered_json(value);
  if (f->type == FT::object) return order(value, f->child);
  if (!value.is_array()) return nlohmann::ordered_json(value);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& item : value) out.push_back(order(item, f->child));
  return out;
}

template <class Json>
nlohmann::ordered_json order(const Json& value, ObjectKind kind) {
  if (!value.is_object()) return nlohmann::ordered_json(value);
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& f : fields_of(kind)) {
    auto it = value.find(std::string(f.key));
    if (it != value.end()) out[std::string(f.key)] = order_child(*it, &f);
  }
  std::vector<std::string> unknown;
  for (auto it = value.begin(); it != value.end(); ++it)
    if (find_field(kind, it.key()) == nullptr) unknown.push_back(it.key());
  std::sort(unknown.begin(), unknown.end());
  for (const auto& k : unknown) out[k] = nlohmann::ordered_json(value.at(k));
  return out;
}

}  // namespace

std::span<const Field> fields_of(ObjectKind kind) {
  switch (kind) {
    case OK::spec:
      return kSpec;
    case OK::device:
      return kDevice;
    case OK::edits:
      return kEdits;
    case OK::device_node:
      return kDeviceNode;
    case OK::mount:
      return kMount;
    case OK::hook:
      return kHook;
    case OK::intel_rdt:
      return kIntelRdt;
    case OK::net_device:
      return kNetDevice;
  }
  return {};
}

const Field* find_field(ObjectKind kind, std::string_view key) {
  for (const auto& f : fields_of(kind))
    if (f.key == key) return &f;
  return nullptr;
}

std::string field_list(ObjectKind kind) {
  std::string out;
  for (const auto& f : fields_of(kind)) {
    if (!out.empty()) out += ", ";
    out += f.key;
  }
  return out;
}

nlohmann::ordered_json canonical_order(const nlohmann::json& value, ObjectKind kind) {
  return order(value, kind);
}

}  // namespace gpufrac::cdi
