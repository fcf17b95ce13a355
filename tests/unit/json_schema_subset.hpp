// A small JSON Schema (draft-07) checker for the keywords the CDI schema uses (see
// tests/fixtures/cdi-schema/README.md): type, properties, required, items, patternProperties,
// minimum, maximum and $ref into the same file or defs.json. Test code only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpufrac::test {

// A JSON file; aborts the test binary when it does not parse.
nlohmann::json load_json_file(const std::string& path);
// JSON Schema / OpenAPI "type": object, array, string, integer, number, boolean or null.
bool has_type(const nlohmann::json& v, const std::string& type);

class SchemaSet {
 public:
  // Loads <dir>/schema.json and <dir>/defs.json; aborts the test binary if they do not parse.
  explicit SchemaSet(const std::string& dir);
  // Problems as "<json path>: <what>"; empty when the document is valid.
  std::vector<std::string> validate(const nlohmann::json& doc) const;

 private:
  void check(const nlohmann::json& v, const nlohmann::json& s, const std::string& file, const std::string& path,
             std::vector<std::string>& out) const;
  std::map<std::string, nlohmann::json> files_;  // "schema.json", "defs.json"
};

}  // namespace gpufrac::test
