#include "core/request/request_keys.hpp"

#include <algorithm>
#include <vector>

#include "core/text.hpp"

namespace gpufrac {

namespace {

// "a, b, ... or z"
template <class F>
std::string listed(F name) {
  std::vector<std::string> names;
  for (const auto& k : kRequestKeys) names.emplace_back(name(k));
  const std::string last = names.back();
  names.pop_back();
  return text::join(names, ", ") + " or " + last;
}

}  // namespace

const RequestKey* request_key_by_annotation(std::string_view key) {
  for (const auto& k : kRequestKeys)
    if (k.annotation == key) return &k;
  return nullptr;
}

const RequestKey* request_key_by_variable(std::string_view name) {
  for (const auto& k : kRequestKeys)
    if (k.variable == name) return &k;
  return nullptr;
}

bool is_own_annotation(std::string_view key) {
  return std::find(kOwnAnnotations.begin(), kOwnAnnotations.end(), key) != kOwnAnnotations.end();
}

bool is_own_variable(std::string_view name) {
  return std::find(kOwnVariables.begin(), kOwnVariables.end(), name) != kOwnVariables.end() ||
         std::any_of(kOwnVariablePrefixes.begin(), kOwnVariablePrefixes.end(),
                     [&](std::string_view p) { return name.starts_with(p); });
}

std::string request_annotation_list() {
  return listed([](const RequestKey& k) { return k.annotation; });
}

std::string request_variable_list() {
  return listed([](const RequestKey& k) { return k.variable; });
}

}  // namespace gpufrac
