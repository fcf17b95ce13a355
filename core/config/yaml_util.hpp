// Strict YAML reading shared by the config file and simulated machine files: every error is one line
// "<file>:<line>: <key>: <problem>; <accepted form>". yaml-cpp exceptions never escape this module.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::yaml {

// A node plus where it came from, so every message can name file:line and the dotted key.
struct Located {
  YAML::Node node;
  std::string file;
  std::string key;  // dotted path, e.g. "nvml.backend" or "gpus[2].mig.instances[0].profile"

  int line() const { return node.Mark().line >= 0 ? node.Mark().line + 1 : 0; }
  std::unexpected<Error> fail(std::string_view problem) const;
  Located child(const std::string& name) const;
  Located item(std::size_t index) const;
};

// Parses a file (bounded size); a syntax error names file:line:column.
Result<Located> load_file(const std::string& path);
Result<Located> load_string(const std::string& content, const std::string& name);

// Refuses keys outside `allowed`, naming the first unknown key and the accepted ones.
Result<> check_keys(const Located& map, std::initializer_list<std::string_view> allowed);
Result<> require_map(const Located& n);
Result<> require_sequence(const Located& n);

Result<std::string> as_string(const Located& n);
Result<bool> as_bool(const Located& n);
Result<std::uint64_t> as_u64(const Located& n);
Result<double> as_double(const Located& n);
// One of `choices`, else an error listing them.
Result<std::string> as_choice(const Located& n, std::initializer_list<std::string_view> choices);
Result<std::vector<std::string>> as_string_list(const Located& n);

}  // namespace gpufrac::yaml
