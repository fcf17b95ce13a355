// The strict field check: what UnmarshalStrict into specs-go types would refuse.
#include <limits>

#include "cdi/validate.hpp"
#include "core/text.hpp"

namespace gpufrac::cdi::detail {

namespace {

using Json = nlohmann::ordered_json;

std::string at(const std::string& where, std::string_view key) {
  return where.empty() ? std::string(key) : where + "." + std::string(key);
}

const char* kind_name(ObjectKind k) {
  switch (k) {
    case ObjectKind::spec:
      return "a spec";
    case ObjectKind::device:
      return "a device";
    case ObjectKind::edits:
      return "containerEdits";
    case ObjectKind::device_node:
      return "a device node";
    case ObjectKind::mount:
      return "a mount";
    case ObjectKind::hook:
      return "a hook";
    case ObjectKind::intel_rdt:
      return "intelRdt";
    case ObjectKind::net_device:
      return "a net device";
  }
  return "";
}

bool is_int(const Json& v) {
  return v.is_number_integer();
}

bool in_range(const Json& v, std::int64_t lo, std::int64_t hi) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi);
  auto i = v.get<std::int64_t>();
  return i >= lo && i <= hi;
}

void check_value(const Json& v, const Field& f, const std::string& where, std::vector<Problem>& out);

void check_list(const Json& v, const std::string& where, std::vector<Problem>& out, bool (*ok)(const Json&),
                const char* message) {
  if (!v.is_array()) {
    out.push_back({Severity::error, where, message});
    return;
  }
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!ok(v[i])) out.push_back({Severity::error, text::cat(where, "[", i, "]"), message});
}

bool is_uint32(const Json& v) {
  return is_int(v) && in_range(v, 0, std::numeric_limits<std::uint32_t>::max());
}

void check_scalar(const Json& v, FieldType t, const std::string& where, std::vector<Problem>& out) {
  constexpr auto kMax64 = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin64 = std::numeric_limits<std::int64_t>::min();
  const char* problem = nullptr;
  if (t == FieldType::string && !v.is_string()) problem = "must be a string";
  if (t == FieldType::boolean && !v.is_boolean()) problem = "must be true or false";
  if ((t == FieldType::int64 || t == FieldType::integer) && !(is_int(v) && in_range(v, kMin64, kMax64)))
    problem = "must be an integer";
  if (t == FieldType::uint32 && !is_uint32(v)) problem = "must be an integer from 0 to 4294967295";
  if (problem) out.push_back({Severity::error, where, problem});
}

void check_value(const Json& v, const Field& f, const std::string& where, std::vector<Problem>& out) {
  switch (f.type) {
    case FieldType::string_list:
      return check_list(
          v, where, out, [](const Json& x) { return x.is_string(); }, "must be a list of strings");
    case FieldType::uint32_list:
      return check_list(v, where, out, is_uint32, "must be a list of integers from 0 to 4294967295");
    case FieldType::string_map:
      if (!v.is_object()) return out.push_back({Severity::error, where, "must be a map of strings"});
      for (auto it = v.begin(); it != v.end(); ++it)
        if (!it.value().is_string()) out.push_back({Severity::error, at(where, it.key()), "must be a string"});
      return;
    case FieldType::object:
      return check_fields(v, f.child, where, out);
    case FieldType::object_list:
      if (!v.is_array()) return out.push_back({Severity::error, where, "must be a list of maps"});
      for (std::size_t i = 0; i < v.size(); ++i) check_fields(v[i], f.child, text::cat(where, "[", i, "]"), out);
      return;
    default:
      return check_scalar(v, f.type, where, out);
  }
}

}  // namespace

void check_fields(const Json& value, ObjectKind kind, const std::string& where, std::vector<Problem>& out) {
  if (!value.is_object()) {
    out.push_back({Severity::error, where, text::cat("must be a map (", kind_name(kind), ")")});
    return;
  }
  for (auto it = value.begin(); it != value.end(); ++it) {
    const Field* f = find_field(kind, it.key());
    if (f == nullptr) {
      out.push_back({Severity::error, at(where, it.key()),
                     text::cat("unknown field; ", kind_name(kind), " has ", field_list(kind))});
      continue;
    }
    if (!it.value().is_null()) check_value(it.value(), *f, at(where, it.key()), out);
  }
  for (const auto& f : fields_of(kind)) {
    auto it = value.find(std::string(f.key));
    if (f.required && (it == value.end() || it->is_null()))
      out.push_back({Severity::error, at(where, f.key), text::cat("missing; ", kind_name(kind), " needs it")});
  }
}

}  // namespace gpufrac::cdi::detail
