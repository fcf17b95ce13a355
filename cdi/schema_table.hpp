// The CDI spec's objects and their exact keys (container-device-interface specs-go/config.go struct
// tags, which are normative; SPEC.md has typos). One table serves the strict field check of
// `gpufrac cdi validate` and the key order `gpufrac cdi generate` writes.
#pragma once

#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpufrac::cdi {

enum class ObjectKind { spec, device, edits, device_node, mount, hook, intel_rdt, net_device };

enum class FieldType {
  string,
  int64,
  uint32,
  integer,  // Go int (hook timeout)
  boolean,
  string_list,
  uint32_list,
  string_map,   // annotations
  object,       // of Field::child
  object_list,  // of Field::child
};

struct Field {
  std::string_view key;
  FieldType type;
  ObjectKind child = ObjectKind::spec;  // for object and object_list
  bool required = false;
};

// The keys of an object kind, in the order generate writes them.
std::span<const Field> fields_of(ObjectKind kind);
const Field* find_field(ObjectKind kind, std::string_view key);
// "env, deviceNodes, mounts, ..." for messages.
std::string field_list(ObjectKind kind);

// A copy of a spec (or part of one, of the given kind) with every object's keys in table order
// (unknown keys after, alphabetically). Deterministic whatever order the input had.
nlohmann::ordered_json canonical_order(const nlohmann::json& value, ObjectKind kind);

}  // namespace gpufrac::cdi
