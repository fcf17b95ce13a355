#include "core/request/burst_request.hpp"

#include <array>
#include <vector>

#include "core/text.hpp"

namespace gpufrac {

namespace {

using namespace annotation;

constexpr std::array<std::string_view, 2> kOwnLimitKeys{kMemoryLimit, kFractionLimit};
constexpr std::array<std::string_view, 2> kAliasLimitKeys{kAliasMemoryLimit, kAliasFractionLimit};
constexpr const char* kLimitKeys = "gpufrac.io/memory-limit or gpufrac.io/fraction-limit (aliases count as these)";
constexpr const char* kEnvLimitKeys = "GPUFRAC_MEMORY_LIMIT or GPUFRAC_FRACTION_LIMIT";
constexpr const char* kMibForm = "a positive integer of MiB, e.g. 16384";
constexpr const char* kNoRequest =
    "is set without a request; add a memory or fraction request beside it (what is booked; the limit is the most "
    "the share may use)";

std::unexpected<Error> refuse(std::string_view name, std::string_view message) {
  return user_error(text::cat(name, ": ", message));
}

std::string_view shown(const KeyNames& names, std::string_view key) {
  auto it = names.find(key);
  return it == names.end() ? key : std::string_view(it->second);
}

bool is_fraction_key(std::string_view key) {
  return key == kFractionLimit || key == kAliasFractionLimit || key == kFraction || key == kAliasFraction ||
         key == kAliasClearml;
}

// The limit keys present, own keys first.
std::vector<std::string_view> limit_keys(const Annotations& a, bool aliases) {
  std::vector<std::string_view> out;
  for (auto k : kOwnLimitKeys)
    if (a.contains(std::string(k))) out.push_back(k);
  if (aliases)
    for (auto k : kAliasLimitKeys)
      if (a.contains(std::string(k))) out.push_back(k);
  return out;
}

Result<std::uint64_t> parse_mib(std::string_view name, std::string_view value) {
  auto v = text::parse_u64(value);
  if (!v || value[0] == '0' || value.size() > 10 || *v > (1ull << 30))
    return refuse(name, text::quote(value) + " is not a MiB amount; use " + kMibForm);
  return *v << 20;
}

// The limit's value in its key's grammar.
Result<MemoryLimit> parse_limit(std::string_view key, std::string_view name, std::string_view value) {
  MemoryLimit l;
  l.is_fraction = is_fraction_key(key);
  if (l.is_fraction) {
    auto f = parse_fraction(value);
    if (!f) return refuse(name, f.error().message);
    l.fraction = *f;
    return l;
  }
  auto m = key == kAliasMemoryLimit ? parse_mib(name, value) : parse_memory(value);
  if (!m) return key == kAliasMemoryLimit ? std::unexpected(m.error()) : refuse(name, m.error().message);
  l.bytes = *m;
  return l;
}

// Where the request cannot take a limit: the reason, or empty.
std::string no_limit_reason(const Request& r, const KeyNames& names, std::string_view size_key) {
  if (r.kind == SizeKind::mig_profile)
    return text::cat("does not apply to ", shown(names, kMigProfile),
                     " (a MIG instance's memory is its own); use it beside a memory or fraction request");
  if (size_key.empty()) return kNoRequest;
  if (r.gpus && *r.gpus > 1)
    return text::cat("does not apply to ", shown(names, kGpus), " ", *r.gpus,
                     " (a limit above the request is for a share of one GPU); leave one of them out");
  if (r.kind == SizeKind::fraction && r.fraction == kWholeGpuPpm)
    return text::cat("does not apply to a whole GPU (", shown(names, size_key),
                     " 1: nobody else is on it); ask for less than the whole GPU, or leave the limit out");
  return {};
}

Result<> apply_limit(Request& r, const Annotations& a, bool aliases, const KeyNames& names, std::string_view size_key) {
  const auto keys = limit_keys(a, aliases);
  if (keys.empty()) return {};
  if (keys.size() > 1)
    return user_error(text::cat(shown(names, keys[0]), " and ", shown(names, keys[1]), ": both set; set only one of ",
                                names.empty() ? kLimitKeys : kEnvLimitKeys));
  const std::string_view key = keys[0], name = shown(names, key);
  if (auto why = no_limit_reason(r, names, size_key); !why.empty()) return refuse(name, why);
  const std::string& value = a.at(std::string(key));
  if (is_fraction_key(key) != is_fraction_key(size_key))
    return refuse(name, text::cat("is a ", is_fraction_key(key) ? "fraction" : "memory", " limit and ",
                                  shown(names, size_key), " a ", is_fraction_key(size_key) ? "fraction" : "memory",
                                  " request; use ", is_fraction_key(size_key) ? kFractionLimit : kMemoryLimit,
                                  " (the limit is of the request's kind)"));
  auto limit = parse_limit(key, name, value);
  if (!limit) return std::unexpected(limit.error());
  const bool below = limit->is_fraction ? limit->fraction < r.fraction : limit->bytes < r.memory_bytes;
  const bool equal = limit->is_fraction ? limit->fraction == r.fraction : limit->bytes == r.memory_bytes;
  if (below)
    return refuse(name, text::cat(text::quote(value), " is below the request (", shown(names, size_key), " ",
                                  text::quote(a.at(std::string(size_key))), "); use a limit of at least the request"));
  if (!equal) r.limit = *limit;  // a limit equal to the request is no limit
  return {};
}

Result<std::uint32_t> parse_timeout_s(std::string_view name, std::string_view value) {
  auto v = text::parse_u64(value);
  if (!v || value[0] == '0' || value.size() > 4 || *v > kMaxWaitS)
    return refuse(name, text::quote(value) + " is not a timeout; use " + kOnLimitTimeoutForm);
  return static_cast<std::uint32_t>(*v);
}

Result<> apply_on_limit(Request& r, const Annotations& a, const KeyNames& names) {
  auto policy = a.find(kOnLimit), timeout = a.find(kOnLimitTimeout);
  if (policy != a.end() && policy->second != "fail" && policy->second != "wait")
    return refuse(shown(names, kOnLimit),
                  text::quote(policy->second) + " is not an on-limit policy; use " + kOnLimitForm);
  const bool wait = policy != a.end() && policy->second == "wait";
  if (timeout == a.end()) {
    if (wait) r.wait_ms = kDefaultWaitMs;
    return {};
  }
  if (!wait)
    return refuse(shown(names, kOnLimitTimeout),
                  text::cat("is set without ", shown(names, kOnLimit), ": wait; add it, or leave the timeout out"));
  auto s = parse_timeout_s(shown(names, kOnLimitTimeout), timeout->second);
  if (!s) return std::unexpected(s.error());
  r.wait_ms = *s * 1000;
  return {};
}

}  // namespace

bool is_burst_key(std::string_view key) {
  return key == kMemoryLimit || key == kFractionLimit || key == kOnLimit || key == kOnLimitTimeout ||
         key == kAliasMemoryLimit || key == kAliasFractionLimit;
}

const char* first_limit_key(const Annotations& a, bool aliases) {
  for (const char* k : {kMemoryLimit, kFractionLimit})
    if (a.contains(k)) return k;
  if (aliases)
    for (const char* k : {kAliasMemoryLimit, kAliasFractionLimit})
      if (a.contains(k)) return k;
  return nullptr;
}

std::unexpected<Error> limit_without_request(std::string_view name) {
  return refuse(name, kNoRequest);
}

Result<> apply_burst(Request& r, const Annotations& a, bool aliases, const KeyNames& names, std::string_view size_key) {
  if (auto l = apply_limit(r, a, aliases, names, size_key); !l) return l;
  return apply_on_limit(r, a, names);
}

std::string describe_burst(const Request& r) {
  std::string out;
  if (r.limit && r.limit->is_fraction) out += " fraction-limit=" + format_fraction(r.limit->fraction);
  if (r.limit && !r.limit->is_fraction) {
    auto m = format_memory(r.limit->bytes);
    out += " memory-limit=" + (m ? *m : text::cat(r.limit->bytes, "B"));
  }
  if (r.wait_ms) out += text::cat(" on-limit=wait on-limit-timeout=", *r.wait_ms / 1000);
  return out;
}

std::string_view burst_form_of(std::string_view key) {
  if (key == kMemoryLimit) return kMemoryForm;
  if (key == kAliasMemoryLimit) return kMibForm;
  if (key == kFractionLimit || key == kAliasFractionLimit) return kFractionForm;
  if (key == kOnLimit) return kOnLimitForm;
  if (key == kOnLimitTimeout) return kOnLimitTimeoutForm;
  return {};
}

}  // namespace gpufrac
