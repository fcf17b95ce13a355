#include "cdi/spec_lines.hpp"

#include <yaml-cpp/yaml.h>

#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

void walk(const YAML::Node& n, const std::string& where, SpecLines& out) {
  if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string at = text::cat(where, "[", i, "]");
      out.emplace(at, n[i].Mark().line + 1);
      walk(n[i], at, out);
    }
  } else if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const std::string at = where.empty() ? it->first.Scalar() : where + "." + it->first.Scalar();
      out.emplace(at, it->first.Mark().line + 1);
      walk(it->second, at, out);
    }
  }
}

}  // namespace

SpecLines spec_lines(const std::string& text) {
  SpecLines out;
  try {
    walk(YAML::Load(text), "", out);
  } catch (const YAML::Exception&) {
    out.clear();
  }
  return out;
}

int line_of(const SpecLines& lines, std::string location) {
  while (!location.empty()) {
    if (auto it = lines.find(location); it != lines.end()) return it->second;
    const std::size_t cut = location.find_last_of(".[");
    location.resize(cut == std::string::npos ? 0 : cut);
  }
  return 1;
}

}  // namespace gpufrac::cdi
