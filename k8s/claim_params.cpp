#include "k8s/claim_params.hpp"

#include <algorithm>

#include "core/request/burst_request.hpp"
#include "core/text.hpp"
#include "k8s/dra_devices.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;

struct Params {
  std::optional<std::uint64_t> limit;
  std::optional<std::uint32_t> wait_ms;
  std::vector<std::string> requests;  // empty: every request of the claim
};

Result<std::string> string_param(const json& v, const std::string& at) {
  if (!v.is_string()) return user_error(at + ": not a string");
  return v.get<std::string>();
}

Result<> read_param(const std::string& key, const json& v, const std::string& at, Params& p) {
  auto s = string_param(v, at);
  if (!s) return std::unexpected(s.error());
  if (key == "memory-limit") {
    auto bytes = parse_k8s_quantity(*s);
    if (!bytes || *bytes == 0)
      return user_error(text::cat(at, ": ", text::quote(*s), " is not a memory quantity; use e.g. 30Gi"));
    p.limit = *bytes;
  } else if (key == "on-limit") {
    if (*s != "wait" && *s != "fail") return user_error(text::cat(at, ": ", text::quote(*s), " is not fail or wait"));
    if (*s == "wait" && !p.wait_ms) p.wait_ms = kDefaultWaitMs;
  } else if (key == "on-limit-timeout") {
    auto secs = text::parse_u64(*s);
    if (!secs || *secs == 0 || *secs > kMaxWaitS || (*s)[0] == '0')
      return user_error(text::cat(at, ": ", text::quote(*s), " is not a timeout; use ", kOnLimitTimeoutForm));
    p.wait_ms = static_cast<std::uint32_t>(*secs * 1000);
  } else {
    return user_error(text::cat(at, ": unknown parameter; use memory-limit, on-limit or on-limit-timeout"));
  }
  return {};
}

// One configuration entry of driver gpufrac.io, or nullopt for another driver's.
Result<std::optional<Params>> params_of(const json& c, const std::string& at) {
  const json* opaque = c.is_object() && c.contains("opaque") ? &c["opaque"] : nullptr;
  if (!opaque || !opaque->is_object() || opaque->value("driver", "") != kDriverName) return std::optional<Params>{};
  Params p;
  const json params = opaque->value("parameters", json::object());
  if (!params.is_object()) return user_error(at + ".opaque.parameters: not an object");
  for (const auto& [key, v] : params.items())
    if (auto r = read_param(key, v, at + ".opaque.parameters." + key, p); !r) return std::unexpected(r.error());
  if (c.contains("requests") && c["requests"].is_array())
    for (const auto& r : c["requests"])
      if (r.is_string()) p.requests.push_back(r.get<std::string>().substr(0, r.get<std::string>().find('/')));
  if (params.contains("on-limit") && params["on-limit"] == "fail") p.wait_ms.reset();
  return std::optional<Params>(std::move(p));
}

Result<> apply(const Params& p, ClaimShare& s, const std::string& at) {
  if (p.wait_ms) s.booking.wait_ms = p.wait_ms;
  if (!p.limit) return {};
  if (s.booking.kind == SizeKind::mig_profile)
    return user_error(at + ".opaque.parameters.memory-limit: " + s.device +
                      " is a MIG device, whose memory is its own; ask for a share of gpu-<i>");
  if (*p.limit < s.bytes)
    return user_error(text::cat(at, ".opaque.parameters.memory-limit: ", k8s_quantity(*p.limit), " is below the ",
                                k8s_quantity(s.bytes), " the claim consumes on ", s.device, "; use at least that"));
  if (*p.limit > s.bytes) s.booking.limit = MemoryLimit{false, 0, *p.limit};
  if (s.booking.kind == SizeKind::fraction) {  // the limit is an amount: book the request as one too
    s.booking.kind = SizeKind::memory;
    s.booking.memory_bytes = s.bytes;
  }
  return {};
}

}  // namespace

Result<> apply_claim_params(const json& claim, const ClaimRef& ref, std::vector<ClaimShare>& shares) {
  const json* configs = claim.is_object() ? &claim : nullptr;
  for (const char* k : {"status", "allocation", "devices", "config"})
    configs = configs && configs->is_object() && configs->contains(k) ? &(*configs)[k] : nullptr;
  if (!configs || !configs->is_array()) return {};
  for (std::size_t i = 0; i < configs->size(); ++i) {
    const std::string at = text::cat("claim ", ref.describe(), ": status.allocation.devices.config[", i, "]");
    auto p = params_of((*configs)[i], at);
    if (!p) return std::unexpected(p.error());
    if (!*p) continue;
    for (auto& s : shares) {
      const auto& names = (*p)->requests;
      if (!names.empty() && std::find(names.begin(), names.end(), s.request) == names.end()) continue;
      if (auto r = apply(**p, s, at); !r) return r;
    }
  }
  return {};
}

}  // namespace gpufrac::dra
