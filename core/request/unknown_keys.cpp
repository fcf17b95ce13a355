#include "core/request/unknown_keys.hpp"

#include "core/request/env_request.hpp"
#include "core/request/request_keys.hpp"
#include "core/spelling.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

// Longer names are no typo of ours: no suggestion (and no quadratic distance on untrusted text).
constexpr std::size_t kMaxSuggestedLength = 64;

std::string did_you_mean(std::string_view name, bool variable) {
  if (name.size() > kMaxSuggestedLength) return "";
  std::vector<std::string> known;
  for (const auto& k : kRequestKeys) known.emplace_back(variable ? k.variable : k.annotation);
  auto near = closest(name, known);
  return near ? " (did you mean " + *near + "?)" : "";
}

std::string_view variable_name(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

}  // namespace

std::string unknown_annotation_message(std::string_view key) {
  return text::cat(text::quote(key), ": unknown gpufrac annotation", did_you_mean(key, false), "; use ",
                   request_annotation_list());
}

std::vector<UnknownName> unknown_request_names(const Annotations& annotations, const std::vector<std::string>& env) {
  std::vector<UnknownName> out;
  for (auto it = annotations.lower_bound(annotation::kPrefix);
       it != annotations.end() && it->first.starts_with(annotation::kPrefix); ++it)
    if (!request_key_by_annotation(it->first) && !is_own_annotation(it->first))
      out.push_back({unknown_annotation_message(it->first), it->first});
  for (const auto& entry : env) {
    const std::string_view name = variable_name(entry);
    if (name.starts_with(annotation::kPrefix)) {  // -e gpufrac.io/fraction=0.25
      out.push_back({text::cat(text::quote(name), " in the container's environment is not a gpufrac request; use ",
                               env_name_for(name), " (or the annotation where the engine can set one)"),
                     ""});
      continue;
    }
    if (!name.starts_with(env_request::kPrefix) || request_key_by_variable(name) || is_own_variable(name)) continue;
    out.push_back({text::cat(text::quote(name), " in the container's environment is not a gpufrac request",
                             did_you_mean(name, true), "; use ", request_variable_list()),
                   ""});
  }
  return out;
}

Result<std::vector<std::string>> check_request_names(Annotations& annotations, const std::vector<std::string>& env,
                                                     UnknownNames policy) {
  std::vector<std::string> lines;
  for (auto& u : unknown_request_names(annotations, env)) {
    if (policy == UnknownNames::refuse) return user_error(u.message);
    if (!u.annotation.empty()) annotations.erase(u.annotation);
    lines.push_back(std::move(u.message));
  }
  return lines;
}

}  // namespace gpufrac
