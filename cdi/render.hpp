// Spec text: JSON (nlohmann, 2-space indent) or YAML written here as block mappings and sequences
// with every string double-quoted in JSON escaping (valid YAML 1.1 and 1.2, read as the same JSON
// by sigs.k8s.io/yaml, which the CDI library parses with). Keys keep the order they have; both end
// with a newline. No timestamps: the same value gives the same bytes.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpufrac::cdi {

enum class Format { yaml, json };

std::string render_json(const nlohmann::ordered_json& value);
// `comment` lines (may be empty) are written first, each prefixed with "# ".
std::string render_yaml(const nlohmann::ordered_json& value, std::string_view comment = "");
std::string render(const nlohmann::ordered_json& value, Format format, std::string_view comment = "");

}  // namespace gpufrac::cdi
