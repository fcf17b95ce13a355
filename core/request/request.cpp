#include "core/request/request.hpp"

#include <array>
#include <vector>

#include "core/mig/mig_profile_name.hpp"
#include "core/request/compute_share.hpp"
#include "core/request/request_gpus.hpp"
#include "core/request/request_keys.hpp"
#include "core/request/unknown_keys.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

using namespace annotation;

constexpr std::array<std::string_view, 3> kAliasKeys{kAliasFraction, kAliasMemory, kAliasClearml};
constexpr const char* kGpuForm =
    "a GPU index or GPU-<uuid> as nvidia-smi -L prints it, e.g. 0 or GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5";
constexpr const char* kPolicyForm = "binpack or spread";
constexpr const char* kMibForm = "a positive integer of MiB, e.g. 4096";
constexpr const char* kSizingKeys =
    "gpufrac.io/fraction, gpufrac.io/memory or gpufrac.io/mig-profile (aliases count as these)";
constexpr const char* kEnvSizingKeys = "GPUFRAC_FRACTION, GPUFRAC_MEMORY or GPUFRAC_MIG_PROFILE";
// What gives a request its size: a sizing key, or compute alone.
constexpr const char* kShareKeys =
    "gpufrac.io/fraction, gpufrac.io/memory, gpufrac.io/mig-profile (aliases count as these), gpufrac.io/compute or "
    "gpufrac.io/gpus";
constexpr const char* kEnvShareKeys =
    "GPUFRAC_FRACTION, GPUFRAC_MEMORY, GPUFRAC_MIG_PROFILE, GPUFRAC_COMPUTE or GPUFRAC_GPUS";

std::unexpected<Error> refuse(std::string_view key, std::string_view message) {
  return user_error(text::cat(key, ": ", message));
}

// The form a key's value must take, for the length message.
std::string_view form_of(std::string_view key) {
  if (key == kMemory) return kMemoryForm;
  if (key == kAliasMemory) return kMibForm;
  if (key == kMigProfile) return kMigProfileForm;
  if (key == kGpu) return kGpuForm;
  if (key == kPolicy) return kPolicyForm;
  if (key == kCompute) return kComputeForm;
  if (key == kComputeMode) return kComputeModeForm;
  if (key == kPriority) return kPriorityForm;
  if (key == kGpus) return kGpusForm;
  return kFractionForm;
}

// Our keys present in the map, in a fixed order (own keys, then enabled aliases).
std::vector<const std::pair<const std::string, std::string>*> present_keys(const Annotations& a, bool aliases) {
  std::vector<const std::pair<const std::string, std::string>*> out;
  for (const auto& k : kRequestKeys)
    if (auto it = a.find(std::string(k.annotation)); it != a.end()) out.push_back(&*it);
  if (aliases)
    for (auto k : kAliasKeys)
      if (auto it = a.find(std::string(k)); it != a.end()) out.push_back(&*it);
  return out;
}

Result<> check_unknown_keys(const Annotations& a) {
  for (auto it = a.lower_bound(kPrefix); it != a.end() && it->first.starts_with(kPrefix); ++it)
    if (!request_key_by_annotation(it->first) && !is_own_annotation(it->first))
      return user_error(unknown_annotation_message(it->first));
  return {};
}

bool is_sizing_key(std::string_view key) {
  return key != kGpu && key != kPolicy && key != kCompute && key != kComputeMode && key != kPriority && key != kGpus;
}

std::size_t max_value_bytes(std::string_view key) {
  return key == kGpu ? kMaxGpuListBytes : kMaxValueBytes;
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

// A request without a sizing key: compute alone is a share of that size (compute=30 is
// fraction=0.3), gpus alone whole GPUs; anything else (gpu, policy, compute-mode, priority) lacks a
// size. `first` names the first key present.
Result<Request> size_by_compute(const Annotations& a, const KeyNames& names, std::string_view first) {
  auto it = a.find(kCompute);
  if (it == a.end() && a.contains(kGpus)) {
    Request r;
    r.fraction = kWholeGpuPpm;
    r.sized_by_gpus = true;
    return r;
  }
  if (it == a.end())
    return refuse(first, text::cat("is set without a size; add ", names.empty() ? kShareKeys : kEnvShareKeys));
  auto ppm = parse_compute(shown(names, kCompute), it->second);
  if (!ppm) return std::unexpected(ppm.error());
  Request r;
  r.kind = SizeKind::fraction;
  r.fraction = *ppm;
  r.sized_by_compute = true;
  return r;
}

// gpufrac.io/compute, compute-mode and priority onto a sized request; all three are refused beside
// mig-profile (a MIG instance's time is its own).
Result<> apply_compute(Request& r, const Annotations& a, const KeyNames& names) {
  for (std::string_view key : {kCompute, kComputeMode, kPriority}) {
    auto it = a.find(std::string(key));
    if (it == a.end()) continue;
    const std::string_view name = shown(names, key);
    if (r.kind == SizeKind::mig_profile)
      return refuse(name, text::cat("does not apply to ", shown(names, kMigProfile),
                                    " (a MIG instance owns its share of the GPU's time); use it with ",
                                    names.empty() ? "gpufrac.io/fraction or gpufrac.io/memory, or on its own"
                                                  : "GPUFRAC_FRACTION or GPUFRAC_MEMORY, or on its own"));
    if (key == kCompute) {
      auto ppm = parse_compute(name, it->second);
      if (!ppm) return std::unexpected(ppm.error());
      r.compute_ppm = *ppm;
    } else if (key == kComputeMode) {
      auto mode = parse_compute_mode(name, it->second);
      if (!mode) return std::unexpected(mode.error());
      r.compute_mode = *mode;
    } else {
      auto priority = parse_priority(name, it->second);
      if (!priority) return std::unexpected(priority.error());
      r.priority = *priority;
    }
  }
  return {};
}

// gpufrac.io/gpus and gpufrac.io/gpu (one GPU, or as many as gpus asks for) onto a sized request.
Result<> apply_gpus(Request& r, const Annotations& a, const KeyNames& names) {
  if (auto it = a.find(kGpus); it != a.end()) {
    const std::string_view name = shown(names, kGpus);
    if (r.kind == SizeKind::mig_profile)
      return refuse(name, text::cat("does not apply to ", shown(names, kMigProfile),
                                    " (a MIG instance is one device of one GPU); use it with ",
                                    names.empty() ? "gpufrac.io/fraction, gpufrac.io/memory or gpufrac.io/compute"
                                                  : "GPUFRAC_FRACTION, GPUFRAC_MEMORY or GPUFRAC_COMPUTE",
                                    ", or on its own"));
    auto n = parse_gpus(name, it->second);
    if (!n) return std::unexpected(n.error());
    r.gpus = *n;
  }
  auto it = a.find(kGpu);
  if (it == a.end()) return {};
  auto pins = parse_gpu_list(shown(names, kGpu), it->second);
  if (!pins) return std::unexpected(pins.error());
  return apply_gpu_pins(r, std::move(*pins), shown(names, kGpu), it->second, shown(names, kGpus));
}

// gpufrac.io/memory beside a mig-profile that names a compute instance smaller than its GPU
// instance ("1c.3g.40gb"): the memory it books of the GPU instance's (which its siblings share).
Result<> apply_ci_memory(Request& r, const Annotations& a, const KeyNames& names) {
  const std::string_view key = shown(names, kMemory);
  if (r.mig_profile.find("c.") == std::string::npos)
    return refuse(key, text::cat("does not apply to ", shown(names, kMigProfile), " ", r.mig_profile,
                                 " (a whole GPU instance's memory is its own); name a compute instance of it, e.g. 1c.",
                                 r.mig_profile, ", or leave it out"));
  auto m = parse_memory(a.at(kMemory));
  if (!m) return refuse(key, m.error().message);
  r.memory_bytes = *m;
  return {};
}

// The sizing keys of one request: one, or mig-profile with gpufrac.io/memory (a compute
// instance's memory).
bool ci_with_memory(const std::vector<std::string_view>& sizing) {
  return sizing.size() == 2 && sizing[0] == kMemory && sizing[1] == kMigProfile;
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
  if (kind == SizeKind::mig_profile && memory_bytes != 0) {
    auto m = format_memory(memory_bytes);
    out += " memory=" + (m ? *m : text::cat(memory_bytes, "B"));
  }
  if (kind == SizeKind::memory) {
    auto m = format_memory(memory_bytes);
    out = "memory=" + (m ? *m : text::cat(memory_bytes, "B"));
  }
  if (gpus && sized_by_gpus) out = text::cat("gpus=", *gpus);  // whole GPUs: the count is the size
  if (compute_ppm) {
    const std::string compute = "compute=" + format_compute_percent(*compute_ppm);
    out = sized_by_compute ? compute : out + " " + compute;
  }
  if (compute_mode) out += text::cat(" compute-mode=", to_string(*compute_mode));
  if (priority) out += text::cat(" priority=", to_string(*priority));
  if (gpus && !sized_by_gpus) out += text::cat(" gpus=", *gpus);
  if (gpu) out += " gpu=" + gpu->describe();
  std::vector<std::string> pins;
  for (const auto& p : gpu_list) pins.push_back(p.describe());
  if (!pins.empty()) out += " gpu=" + text::join(pins, ",");
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

Result<std::uint32_t> parse_compute(std::string_view key, std::string_view value) {
  auto ppm = parse_compute_percent(value);
  if (!ppm) return refuse(key, ppm.error().message);
  return *ppm;
}

Result<ComputeMode> parse_compute_mode(std::string_view key, std::string_view value) {
  if (auto m = compute_mode_from(value)) return *m;
  return refuse(key, text::quote(value) + " is not a compute mode; use " + kComputeModeForm);
}

Result<ComputePriority> parse_priority(std::string_view key, std::string_view value) {
  if (auto p = compute_priority_from(value)) return *p;
  return refuse(key, text::quote(value) + " is not a priority; use " + kPriorityForm);
}

const std::string* first_request_key(const Annotations& a, bool aliases) {
  for (auto it = a.lower_bound(kPrefix); it != a.end() && it->first.starts_with(kPrefix); ++it)
    if (!is_own_annotation(it->first)) return &it->first;
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
    if (kv->second.size() > max_value_bytes(kv->first))
      return refuse(shown(names, kv->first),
                    text::cat(text::quote(kv->second), " is too long (at most ", max_value_bytes(kv->first),
                              " bytes); use ", form_of(kv->first)));
    if (is_sizing_key(kv->first)) sizing.push_back(kv->first);
  }
  if (keys.empty()) return std::optional<Request>{};
  const bool ci_memory = ci_with_memory(sizing);
  if (sizing.size() > 1 && !ci_memory)
    return user_error(text::cat(shown(names, sizing[0]), " and ", shown(names, sizing[1]),
                                ": both set; set only one of ", names.empty() ? kSizingKeys : kEnvSizingKeys));
  const std::string_view size_key = ci_memory ? std::string_view(kMigProfile) : sizing.empty() ? "" : sizing[0];
  auto request = sizing.empty() ? size_by_compute(a, names, shown(names, keys[0]->first))
                                : parse_size(size_key, a.at(std::string(size_key)), shown(names, size_key));
  if (!request) return std::unexpected(request.error());
  if (ci_memory)
    if (auto r = apply_ci_memory(*request, a, names); !r) return std::unexpected(r.error());
  if (auto r = apply_compute(*request, a, names); !r) return std::unexpected(r.error());
  if (auto r = apply_gpus(*request, a, names); !r) return std::unexpected(r.error());
  if (auto it = a.find(kPolicy); it != a.end()) {
    auto policy = parse_policy(shown(names, kPolicy), it->second);
    if (!policy) return std::unexpected(policy.error());
    request->policy = *policy;
  }
  return std::optional<Request>(std::move(*request));
}

}  // namespace gpufrac
