#include "openapi_check.hpp"

#include "json_schema_subset.hpp"

namespace gpufrac::testing {

namespace {

using json = nlohmann::json;
constexpr const char* kRefPrefix = "#/components/schemas/";

struct Checker {
  const json& schemas;
  std::vector<std::string> out;

  void check(const json& v, const json& schema, const std::string& at) {
    if (schema.contains("$ref")) return check_ref(v, schema["$ref"].get<std::string>(), at);
    if (schema.contains("allOf"))
      for (const auto& s : schema["allOf"]) check(v, s, at);
    if (schema.contains("oneOf")) {
      std::size_t matches = 0;
      for (const auto& s : schema["oneOf"]) {
        Checker c{schemas, {}};
        c.check(v, s, at);
        matches += c.out.empty() ? 1 : 0;
      }
      if (matches != 1) out.push_back(at + ": matches " + std::to_string(matches) + " of oneOf");
    }
    if (schema.contains("type") && !test::has_type(v, schema["type"].get<std::string>())) {
      out.push_back(at + ": not of type " + schema["type"].get<std::string>());
      return;
    }
    if (v.is_object()) check_object(v, schema, at);
    if (v.is_array() && schema.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i) check(v[i], schema["items"], at + "[" + std::to_string(i) + "]");
  }

  void check_ref(const json& v, const std::string& ref, const std::string& at) {
    const std::string name = ref.substr(std::string(kRefPrefix).size());
    if (!schemas.contains(name)) {  // left dangling by the excerpt: ObjectMeta and the like
      if (!v.is_object()) out.push_back(at + ": not an object (" + name + ")");
      return;
    }
    check(v, schemas[name], at);
  }

  void check_object(const json& v, const json& schema, const std::string& at) {
    if (schema.contains("required"))
      for (const auto& r : schema["required"])
        if (!v.contains(r.get<std::string>())) out.push_back(at + ": missing required " + r.get<std::string>());
    const bool has_props = schema.contains("properties");
    for (const auto& [key, value] : v.items()) {
      if (has_props && schema["properties"].contains(key)) {
        check(value, schema["properties"][key], at + "." + key);
      } else if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object()) {
        check(value, schema["additionalProperties"], at + "." + key);
      } else if (has_props) {
        out.push_back(at + "." + key + ": unknown field");
      }
    }
  }
};

}  // namespace

std::vector<std::string> openapi_violations(const json& doc, const std::string& schema_name, const json& schemas) {
  Checker c{schemas, {}};
  c.check_ref(doc, kRefPrefix + schema_name, "$");
  return c.out;
}

const json& resource_v1_schemas() {
  static const json schemas = test::load_json_file(
      std::string(GPUFRAC_SOURCE_DIR) +
      "/tests/fixtures/kubernetes-openapi/resource.k8s.io-v1-schemas.json")["components"]["schemas"];
  return schemas;
}

}  // namespace gpufrac::testing
