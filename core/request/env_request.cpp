#include "core/request/env_request.hpp"

#include <array>
#include <utility>

#include "core/request/request_keys.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

using namespace env_request;

std::string_view annotation_for(std::string_view name) {
  const RequestKey* k = request_key_by_variable(name);
  return k ? k->annotation : std::string_view();
}

std::pair<std::string_view, std::string_view> split_entry(std::string_view entry) {
  const auto eq = entry.find('=');
  if (eq == std::string_view::npos) return {entry, {}};
  return {entry.substr(0, eq), entry.substr(eq + 1)};
}

// The request variables of env, by annotation key; a variable set twice is refused.
Result<RequestKeys> env_keys(const std::vector<std::string>& env) {
  RequestKeys out;
  for (const auto& entry : env) {
    if (!entry.starts_with(kPrefix)) continue;
    auto [name, value] = split_entry(entry);
    const std::string_view key = annotation_for(name);
    if (key.empty()) continue;
    auto [it, fresh] = out.keys.emplace(std::string(key), std::string(value));
    if (!fresh && it->second != value)
      return user_error(text::cat(name, ": set twice in the container's environment (", text::quote(it->second),
                                  " and ", text::quote(value), "); set it once"));
    out.names.emplace(std::string(key), std::string(name));
  }
  return out;
}

}  // namespace

std::string env_name_for(std::string_view key) {
  if (key.starts_with(kPrefix)) return std::string(key.substr(0, 64));
  std::string out = kPrefix;
  key = key.substr(key.starts_with(annotation::kPrefix) ? std::string_view(annotation::kPrefix).size() : 0);
  for (char c : key.substr(0, 64))
    out.push_back(c == '-' || c == '.' || c == '/' ? '_' : (c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c));
  return out;
}

Result<RequestKeys> request_keys(const Annotations& annotations, const std::vector<std::string>& env, bool aliases) {
  auto from_env = env_keys(env);
  if (!from_env) return from_env;
  if (from_env->keys.empty()) return RequestKeys{annotations, {}};
  if (const std::string* key = first_request_key(annotations, aliases)) {
    // An untrusted key: at most 64 bytes of it in the message.
    const std::string shown = key->size() <= 64 ? *key : key->substr(0, 64) + "...";
    return user_error(text::cat(shown, " and ", from_env->names.begin()->second,
                                ": a request both by annotation and by environment; use one of them"));
  }
  for (const auto& [k, v] : annotations) from_env->keys.emplace(k, v);
  return from_env;
}

Result<std::optional<Request>> parse_container_request(const Annotations& annotations,
                                                       const std::vector<std::string>& env, bool aliases) {
  auto keys = request_keys(annotations, env, aliases);
  if (!keys) return std::unexpected(keys.error());
  return parse_request(keys->keys, aliases, keys->names);
}

bool has_container_request(const Annotations& annotations, const std::vector<std::string>& env, bool aliases) {
  if (has_gpufrac_request(annotations, aliases)) return true;
  for (const auto& entry : env)
    if (entry.starts_with(kPrefix) && !annotation_for(split_entry(entry).first).empty()) return true;
  return false;
}

}  // namespace gpufrac
