#include "core/request.hpp"

#include <array>
#include <vector>

#include "core/mig_profile_name.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

using namespace annotation;

constexpr std::array<std::string_view, 6> kOwnKeys{kFraction, kMemory, kMigProfile, kGpu, kPolicy, kInjected};
constexpr std::array<std::string_view, 3> kAliasKeys{kAliasFraction, kAliasMemory, kAliasClearml};
constexpr const char* kGpuForm =
    "a GPU index or GPU-<uuid> as nvidia-smi -L prints it, e.g. 0 or GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5";
constexpr const char* kPolicyForm = "binpack or spread";
constexpr const char* kMibForm = "a positive integer of MiB, e.g. 4096";
constexpr const char* kSizingKeys =
    "gpufrac.io/fraction, gpufrac.io/memory or gpufrac.io/mig-profile (aliases count as these)";
constexpr const char* kEnvSizingKeys = "GPUFRAC_FRACTION, GPUFRAC_MEMORY or GPUFRAC_MIG_PROFILE";

std::unexpected<Error> refuse(std::string_view key, std::string_view message) {
  return user_error(text::cat(key, ": ", message));
}

bool is_own_key(std::string_view key) {
  for (auto k : kOwnKeys)
    if (key == k) return true;
  return false;
}

// The form a key's value must take, for the length message.
std::string_view form_of(std::string_view key) {
  if (key == kMemory) return kMemoryForm;
  if (key == kAliasMemory) return kMibForm;
  if (key == kMigProfile) return kMigProfileForm;
  if (key == kGpu) return kGpuForm;
  if (key == kPolicy) return kPolicyForm;
  return kFractionForm;
}

// Our keys present in the map, in a fixed order (own keys, then enabled aliases).
std::vector<const std::pair<const std::string, std::string>*> present_keys(const Annotations& a, bool aliases) {
  std::vector<const std::pair<const std::string, std::string>*> out;
  for (auto k : kOwnKeys)
    if (auto it = a.find(std::string(k)); it != a.end() && k != kInjected) out.push_back(&*it);
  if (aliases)
    for (auto k : kAliasKeys)
      if (auto it = a.find(std::string(k)); it != a.end()) out.push_back(&*it);
  return out;
}

Result<> check_unknown_keys(const Annotations& a) {
  for (auto it = a.lower_bound(kPrefix); it != a.end() && it->first.starts_with(kPrefix); ++it)
    if (!is_own_key(it->first))
      return user_error(text::quote(it->first) +
                        ": unknown gpufrac annotation; use gpufrac.io/fraction, gpufrac.io/memory, "
                        "gpufrac.io/mig-profile, gpufrac.io/gpu or gpufrac.io/policy");
  return {};
}

bool is_sizing_key(std::string_view key) {
  return key != kGpu && key != kPolicy;
}

// The name a message gives a key: the environment variable it was read from, else the key.
std::string_view shown(const KeyNames& names, std::string_view key) {
  auto it = names.find(key);
  return it == names.end() ? key : std::string_view(it->second);
}

Result<std::uint64_t> parse_mib(std::string_view key, std::string_view value) {
  auto v = text::parse_u64(value);
  if (!v || value[0] == '0' || value.size() > 10 || *v > (1ull << 30))
    return refuse(key, text::quote(value) + " is not a MiB amount; use " + kMibForm);
  return *v << 20;
}

Result<Request> parse_size(std::string_view key, std::string_view value, std::string_view label) {
  Request r;
  auto wrap = [&](const Error& e) { return refuse(label, e.message); };
  if (key == kMemory) {
    auto m = parse_memory(value);
    if (!m) return wrap(m.error());
    r.kind = SizeKind::memory;
    r.memory_bytes = *m;
  } else if (key == kAliasMemory) {
    auto m = parse_mib(key, value);
    if (!m) return std::unexpected(m.error());
    r.kind = SizeKind::memory;
    r.memory_bytes = *m;
  } else if (key == kMigProfile) {
    auto p = canonical_mig_profile(value);
    if (!p) return wrap(p.error());
    r.kind = SizeKind::mig_profile;
    r.mig_profile = *p;
  } else {
    auto f = parse_fraction(value);
    if (!f) return wrap(f.error());
    r.kind = SizeKind::fraction;
    r.fraction = *f;
  }
  return r;
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
bool is_gpu_uuid(std::string_view v) {
  static constexpr std::array<std::size_t, 5> kGroups{8, 4, 4, 4, 12};
  if (!v.starts_with("GPU-")) return false;
  auto parts = text::split(v.substr(4), '-');
  if (parts.size() != kGroups.size()) return false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].size() != kGroups[i]) return false;
    for (char c : parts[i])
      if (!is_hex(c)) return false;
  }
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace

std::string GpuPin::describe() const {
  if (!mig_uuid.empty()) return mig_uuid;
  return index ? text::cat(*index) : uuid;
}

std::string Request::describe() const {
  std::string out;
  if (kind == SizeKind::fraction) out = "fraction=" + format_fraction(fraction);
  if (kind == SizeKind::mig_profile) out = "mig-profile=" + mig_profile;
  if (kind == SizeKind::memory) {
    auto m = format_memory(memory_bytes);
    out = "memory=" + (m ? *m : text::cat(memory_bytes, "B"));
  }
  if (gpu) out += " gpu=" + gpu->describe();
  if (gpu && gpu->mig_start) out += text::cat(" placement=", *gpu->mig_start);
  if (policy) out += text::cat(" policy=", to_string(*policy));
  return out;
}

Result<GpuPin> parse_gpu_pin(std::string_view key, std::string_view value) {
  GpuPin pin;
  if (is_gpu_uuid(value)) {
    pin.uuid = "GPU-" + lower(value.substr(4));
    return pin;
  }
  auto v = text::parse_u64(value);
  if (!v || value.size() > 4 || (value.size() > 1 && value[0] == '0'))
    return refuse(key, text::quote(value) + " is not a GPU; use " + kGpuForm);
  pin.index = static_cast<std::uint32_t>(*v);
  return pin;
}

Result<Policy> parse_policy(std::string_view key, std::string_view value) {
  if (value == "binpack") return Policy::binpack;
  if (value == "spread") return Policy::spread;
  return refuse(key, text::quote(value) + " is not a policy; use " + kPolicyForm);
}

const std::string* first_request_key(const Annotations& a, bool aliases) {
  for (auto it = a.lower_bound(kPrefix); it != a.end() && it->first.starts_with(kPrefix); ++it)
    if (it->first != kInjected) return &it->first;
  if (aliases)
    for (auto k : kAliasKeys)
      if (auto it = a.find(std::string(k)); it != a.end()) return &it->first;
  return nullptr;
}

bool has_gpufrac_request(const Annotations& a, bool aliases) {
  return first_request_key(a, aliases) != nullptr;
}

Result<std::optional<Request>> parse_request(const Annotations& a, bool aliases, const KeyNames& names) {
  if (auto r = check_unknown_keys(a); !r) return std::unexpected(r.error());
  auto keys = present_keys(a, aliases);
  std::vector<std::string_view> sizing;
  for (const auto* kv : keys) {
    if (kv->second.size() > kMaxValueBytes)
      return refuse(shown(names, kv->first), text::cat(text::quote(kv->second), " is too long (at most ",
                                                       kMaxValueBytes, " bytes); use ", form_of(kv->first)));
    if (is_sizing_key(kv->first)) sizing.push_back(kv->first);
  }
  if (keys.empty()) return std::optional<Request>{};
  if (sizing.size() > 1)
    return user_error(text::cat(shown(names, sizing[0]), " and ", shown(names, sizing[1]),
                                ": both set; set only one of ", names.empty() ? kSizingKeys : kEnvSizingKeys));
  if (sizing.empty())
    return refuse(shown(names, keys[0]->first),
                  text::cat("is set without a size; add ", names.empty() ? kSizingKeys : kEnvSizingKeys));
  auto request = parse_size(sizing[0], a.at(std::string(sizing[0])), shown(names, sizing[0]));
  if (!request) return std::unexpected(request.error());
  if (auto it = a.find(kGpu); it != a.end()) {
    auto pin = parse_gpu_pin(shown(names, kGpu), it->second);
    if (!pin) return std::unexpected(pin.error());
    request->gpu = *pin;
  }
  if (auto it = a.find(kPolicy); it != a.end()) {
    auto policy = parse_policy(shown(names, kPolicy), it->second);
    if (!policy) return std::unexpected(policy.error());
    request->policy = *policy;
  }
  return std::optional<Request>(std::move(*request));
}

}  // namespace gpufrac
