#include "json_schema_subset.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace gpufrac::test {

nlohmann::json load_json_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) {
    std::fprintf(stderr, "cannot parse %s\n", path.c_str());
    std::abort();
  }
  return j;
}

bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

namespace {

long double as_number(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<std::int64_t>());
  return v.get<long double>();
}

}  // namespace

SchemaSet::SchemaSet(const std::string& dir) {
  files_["schema.json"] = load_json_file(dir + "/schema.json");
  files_["defs.json"] = load_json_file(dir + "/defs.json");
}

std::vector<std::string> SchemaSet::validate(const nlohmann::json& doc) const {
  std::vector<std::string> out;
  check(doc, files_.at("schema.json"), "schema.json", "$", out);
  return out;
}

void SchemaSet::check(const nlohmann::json& v, const nlohmann::json& s, const std::string& file,
                      const std::string& path, std::vector<std::string>& out) const {
  if (auto ref = s.find("$ref"); ref != s.end()) {  // draft-07: $ref replaces its siblings
    const std::string r = ref->get<std::string>();
    const auto hash = r.find('#');
    const std::string target = hash == 0 ? file : r.substr(0, hash);
    const nlohmann::json& resolved = files_.at(target).at(nlohmann::json::json_pointer(r.substr(hash + 1)));
    return check(v, resolved, target, path, out);
  }
  if (auto t = s.find("type"); t != s.end() && !has_type(v, t->get<std::string>()))
    return out.push_back(path + ": not of type " + t->get<std::string>());
  if (v.is_number()) {
    if (auto m = s.find("minimum"); m != s.end() && as_number(v) < as_number(*m))
      out.push_back(path + ": below minimum");
    if (auto m = s.find("maximum"); m != s.end() && as_number(v) > as_number(*m))
      out.push_back(path + ": above maximum");
  }
  if (v.is_object()) {
    if (auto req = s.find("required"); req != s.end())
      for (const auto& k : *req)
        if (!v.contains(k.get<std::string>())) out.push_back(path + ": missing required " + k.get<std::string>());
    if (auto props = s.find("properties"); props != s.end())
      for (auto it = props->begin(); it != props->end(); ++it)
        if (v.contains(it.key())) check(v.at(it.key()), it.value(), file, path + "." + it.key(), out);
    if (auto pats = s.find("patternProperties"); pats != s.end())
      for (auto p = pats->begin(); p != pats->end(); ++p) {
        const std::regex re(p.key());
        for (auto it = v.begin(); it != v.end(); ++it)
          if (std::regex_search(it.key(), re)) check(it.value(), p.value(), file, path + "." + it.key(), out);
      }
  }
  if (v.is_array())
    if (auto items = s.find("items"); items != s.end())
      for (std::size_t i = 0; i < v.size(); ++i) check(v[i], *items, file, path + "[" + std::to_string(i) + "]", out);
}

}  // namespace gpufrac::test
