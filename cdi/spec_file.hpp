// Reading and writing spec files. A spec is read as YAML whatever its extension (JSON is YAML; the
// CDI library does the same) into JSON values typed as sigs.k8s.io/yaml would type them: quoted
// scalars are strings; plain scalars are null (~, null, empty), booleans (true/false, yes/no,
// on/off, y/n in YAML 1.1 spellings), integers, floats, or strings. A duplicate key is an error,
// as in the library's strict parse. yaml-cpp exceptions stay inside this module.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gpufrac::cdi {

inline constexpr std::size_t kMaxSpecBytes = 16u << 20;

Result<nlohmann::ordered_json> parse_spec_text(const std::string& text, const std::string& name);
Result<nlohmann::ordered_json> read_spec_file(const std::string& path);
// Atomically replaces path (temp file in the same directory, fsync, rename), mode 0644, creating
// the directory (0755) when needed.
Result<> write_spec_file(const std::string& path, std::string_view content);
// True for the names a runtime reads from a spec directory (*.yaml, *.json).
bool is_spec_file_name(std::string_view name);

}  // namespace gpufrac::cdi
