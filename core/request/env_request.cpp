#include "core/request/env_request.hpp"

#include <array>
#include <utility>

#include "core/spelling.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

using namespace env_request;

// Variable -> the annotation it stands for.
constexpr std::array<std::pair<std::string_view, std::string_view>, 13> kVariables{{
    {"GPUFRAC_FRACTION", annotation::kFraction},
    {"GPUFRAC_MEMORY", annotation::kMemory},
    {"GPUFRAC_MIG_PROFILE", annotation::kMigProfile},
    {"GPUFRAC_GPU", annotation::kGpu},
    {"GPUFRAC_GPUS", annotation::kGpus},
    {"GPUFRAC_POLICY", annotation::kPolicy},
    {"GPUFRAC_COMPUTE", annotation::kCompute},
    {"GPUFRAC_COMPUTE_MODE", annotation::kComputeMode},
    {"GPUFRAC_PRIORITY", annotation::kPriority},
    {"GPUFRAC_MEMORY_LIMIT", annotation::kMemoryLimit},
    {"GPUFRAC_FRACTION_LIMIT", annotation::kFractionLimit},
    {"GPUFRAC_ON_LIMIT", annotation::kOnLimit},
    {"GPUFRAC_ON_LIMIT_TIMEOUT", annotation::kOnLimitTimeout},
}};
constexpr const char* kVariableList =
    "GPUFRAC_FRACTION, GPUFRAC_MEMORY, GPUFRAC_MIG_PROFILE, GPUFRAC_GPU, GPUFRAC_GPUS, GPUFRAC_POLICY, "
    "GPUFRAC_COMPUTE, GPUFRAC_COMPUTE_MODE, GPUFRAC_PRIORITY, GPUFRAC_MEMORY_LIMIT, GPUFRAC_FRACTION_LIMIT, "
    "GPUFRAC_ON_LIMIT or GPUFRAC_ON_LIMIT_TIMEOUT";
// NVIDIA's container toolkit variables (whole MiB, both or neither): with the aliases on, a request
// of their own when the container asks gpufrac nothing else (docs/architecture.md "Burstable memory").
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kNvidiaVariables{{
    {"NVIDIA_GPU_MEMORY_REQUEST", annotation::kAliasMemory},
    {"NVIDIA_GPU_MEMORY_LIMIT", annotation::kAliasMemoryLimit},
}};

std::string_view annotation_for(std::string_view name) {
  for (const auto& [variable, key] : kVariables)
    if (name == variable) return key;
  return {};
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

// NVIDIA_GPU_MEMORY_REQUEST and NVIDIA_GPU_MEMORY_LIMIT as the request aliases gpu-memory and
// gpu-memory.limit (MiB both); one without the other is refused, as NVIDIA's hook ignores it.
Result<RequestKeys> nvidia_keys(const std::vector<std::string>& env) {
  RequestKeys out;
  for (const auto& entry : env) {
    auto [name, value] = split_entry(entry);
    for (const auto& [variable, key] : kNvidiaVariables) {
      if (name != variable) continue;
      auto [it, fresh] = out.keys.emplace(std::string(key), std::string(value));
      if (!fresh) it->second = std::string(value);  // the last one, as a runtime reads it
      out.names.emplace(std::string(key), std::string(name));
    }
  }
  if (out.keys.size() == 1) {
    const bool has_request = out.keys.contains(annotation::kAliasMemory);
    return user_error(text::cat(has_request ? kNvidiaVariables[0].first : kNvidiaVariables[1].first, ": set without ",
                                has_request ? kNvidiaVariables[1].first : kNvidiaVariables[0].first,
                                "; set both, whole MiB (NVIDIA's toolkit ignores one alone), or use GPUFRAC_MEMORY"));
  }
  return out;
}

bool has_nvidia_request(const std::vector<std::string>& env) {
  for (const auto& entry : env)
    if (entry.starts_with("NVIDIA_GPU_MEMORY_"))
      for (const auto& [variable, key] : kNvidiaVariables)
        if (split_entry(entry).first == variable) return true;
  return false;
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
  if (from_env->keys.empty() && aliases && !has_gpufrac_request(annotations, aliases) && has_nvidia_request(env))
    return nvidia_keys(env);
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
  return aliases && has_nvidia_request(env);
}

std::vector<std::string> env_request_warnings(const std::vector<std::string>& env) {
  std::vector<std::string> variables;
  for (const auto& [variable, key] : kVariables) variables.emplace_back(variable);
  std::vector<std::string> out;
  for (const auto& entry : env) {
    const std::string_view name = split_entry(entry).first;
    if (name.starts_with(annotation::kPrefix)) {  // -e gpufrac.io/fraction=0.25
      out.push_back(text::cat(text::quote(name), " in the container's environment is not a gpufrac request; use ",
                              env_name_for(name), " (or the annotation where the engine can set one)"));
      continue;
    }
    if (!entry.starts_with(kPrefix)) continue;
    if (!annotation_for(name).empty() || name == kDevices || name == kMemoryLimits || name == "GPUFRAC_CONFIG")
      continue;
    auto near = closest(name, variables);
    out.push_back(text::cat(text::quote(name), " in the container's environment is not a gpufrac request",
                            near ? " (did you mean " + *near + "?)" : std::string(), "; use ", kVariableList));
  }
  return out;
}

}  // namespace gpufrac
