#include "k8s/claim_config.hpp"

#include <algorithm>

#include "core/request/burst_request.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"
#include "k8s/dra_devices.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;

constexpr const char* kParametersForm =
    "{\"apiVersion\": \"gpufrac.io/v1\", \"kind\": \"ShareConfig\", \"computeMode\": \"sm\", \"memoryLimit\": "
    "\"30Gi\", \"onLimit\": \"wait\", \"onLimitTimeout\": 5} (each optional; computeMode fair, strict or sm)";

// A parameter's value as a message shows it: a string quoted, anything else as JSON, quoted.
std::string value_text(const json& v) {
  return text::quote(v.is_string() ? v.get<std::string>() : v.dump());
}

struct Entry {
  std::vector<std::string> requests;  // empty: every request
  std::optional<ComputeMode> mode;
  std::optional<std::uint64_t> limit;
  std::optional<std::uint32_t> wait_ms;  // set: on-limit wait
};

Result<> read_mode(const json& v, const std::string& at, Entry& e) {
  const auto parsed = v.is_string() ? compute_mode_from(v.get<std::string>()) : std::nullopt;
  if (!parsed) return user_error(text::cat(at, ": ", value_text(v), " is not a compute mode; use ", kComputeModeForm));
  e.mode = *parsed;
  return {};
}

Result<> read_limit(const json& v, const std::string& at, Entry& e) {
  const auto bytes = v.is_string() ? parse_k8s_quantity(v.get<std::string>()) : Result<std::uint64_t>(0);
  if (!bytes || *bytes == 0)
    return user_error(text::cat(at, ": ", value_text(v), " is not a memory quantity; use a string, e.g. \"30Gi\""));
  e.limit = *bytes;
  return {};
}

// onLimitTimeout: whole seconds, as a JSON integer or a string of digits.
Result<> read_timeout(const json& v, const std::string& at, Entry& e) {
  std::optional<std::uint64_t> secs;
  if (v.is_number_integer() && v.get<std::int64_t>() > 0) secs = v.get<std::uint64_t>();
  if (v.is_string() && !v.get<std::string>().starts_with('0')) secs = text::parse_u64(v.get<std::string>());
  if (!secs || *secs == 0 || *secs > kMaxWaitS)
    return user_error(text::cat(at, ": ", value_text(v), " is not a timeout; use ", kOnLimitTimeoutForm));
  e.wait_ms = static_cast<std::uint32_t>(*secs * 1000);
  return {};
}

Result<> read_on_limit(const json& v, const std::string& at) {
  if (v == "fail" || v == "wait") return {};
  return user_error(text::cat(at, ": ", value_text(v), " is not fail or wait"));
}

Result<> read_parameter(const std::string& key, const json& value, const std::string& at, Entry& e) {
  const std::string field = at + "." + key;
  if (key == "computeMode") return read_mode(value, field, e);
  if (key == "memoryLimit") return read_limit(value, field, e);
  if (key == "onLimit") return read_on_limit(value, field);
  if (key == "onLimitTimeout") return read_timeout(value, field, e);
  if ((key == "apiVersion" && value == "gpufrac.io/v1") || (key == "kind" && value == "ShareConfig")) return {};
  return user_error(
      text::cat(at, ".", text::quote(key), ": ", value_text(value), " is not accepted; use ", kParametersForm));
}

Result<> read_parameters(const json& p, const std::string& at, Entry& e) {
  if (!p.is_object()) return user_error(text::cat(at, ": is not an object; use ", kParametersForm));
  for (const auto& [key, value] : p.items())
    if (auto r = read_parameter(key, value, at, e); !r) return r;
  const bool wait = p.value("onLimit", "") == "wait";
  if (e.wait_ms && !wait)
    return user_error(at + ".onLimitTimeout: is set without onLimit: wait; add it, or leave the timeout out");
  if (wait && !e.wait_ms) e.wait_ms = kDefaultWaitMs;
  return {};
}

// One status.allocation.devices.config[i] of gpufrac.io, or nullopt for another driver's.
Result<std::optional<Entry>> entry_of(const json& item, const std::string& where) {
  const json* opaque = item.is_object() && item.contains("opaque") ? &item["opaque"] : nullptr;
  if (opaque == nullptr || !opaque->is_object() || opaque->value("driver", "") != "gpufrac.io")
    return std::optional<Entry>{};
  Entry e;
  if (item.contains("requests")) {
    if (!item["requests"].is_array()) return user_error(where + ".requests: is not a list of request names");
    for (const auto& r : item["requests"])
      if (r.is_string()) e.requests.push_back(r.get<std::string>().substr(0, r.get<std::string>().find('/')));
  }
  if (auto r = read_parameters((*opaque)["parameters"], where + ".opaque.parameters", e); !r)
    return std::unexpected(r.error());
  return std::optional<Entry>(std::move(e));
}

Result<> apply_mode(ComputeMode mode, ClaimShare& s, const std::string& at) {
  if (mode != ComputeMode::sm) {
    s.booking.compute_mode = mode;
    return {};
  }
  const std::string head = text::cat(at, ".computeMode: sm on ", s.device);
  if (s.booking.kind == SizeKind::mig_profile)
    return user_error(head + ": a MIG device owns its SMs; an SM share takes a share of gpu-<i>");
  if (!s.booking.compute_ppm)
    return user_error(head +
                      " needs a compute request, the percent of the GPU's SMs (capacity requests compute: "
                      "\"30\")");
  s.booking.compute_mode = ComputeMode::sm;
  return {};
}

Result<> apply_limit(std::uint64_t limit, ClaimShare& s, const std::string& at) {
  if (s.booking.kind == SizeKind::mig_profile)
    return user_error(at + ".memoryLimit: " + s.device +
                      " is a MIG device, whose memory is its own; ask for a share of gpu-<i>");
  if (limit < s.bytes)
    return user_error(text::cat(at, ".memoryLimit: ", k8s_quantity(limit), " is below the ", k8s_quantity(s.bytes),
                                " the claim consumes on ", s.device, "; use at least that"));
  if (limit > s.bytes) s.booking.limit = MemoryLimit{false, 0, limit};
  if (s.booking.kind == SizeKind::fraction) {  // the limit is an amount: book the request as one too
    s.booking.kind = SizeKind::memory;
    s.booking.memory_bytes = s.bytes;
  }
  return {};
}

Result<> apply(const Entry& e, ClaimShare& s, const std::string& at) {
  if (!e.requests.empty() && std::find(e.requests.begin(), e.requests.end(), s.request) == e.requests.end()) return {};
  if (e.mode)
    if (auto r = apply_mode(*e.mode, s, at); !r) return r;
  if (e.wait_ms) s.booking.wait_ms = e.wait_ms;
  return e.limit ? apply_limit(*e.limit, s, at) : Result<>{};
}

}  // namespace

Result<> apply_claim_config(const json& claim, const ClaimRef& ref, std::vector<ClaimShare>& shares) {
  const json* config = claim.is_object() ? &claim : nullptr;
  for (const char* k : {"status", "allocation", "devices", "config"}) {
    if (config == nullptr || !config->is_object() || !config->contains(k)) return {};
    config = &(*config)[k];
  }
  const std::string head = "claim " + ref.describe();
  if (!config->is_array()) return user_error(head + ": status.allocation.devices.config is not a list");
  for (std::size_t i = 0; i < config->size(); ++i) {
    const std::string where = text::cat("status.allocation.devices.config[", i, "]");
    auto e = entry_of((*config)[i], where);
    if (!e) return std::unexpected(e.error().wrap(head));
    if (!*e) continue;
    for (auto& s : shares)
      if (auto r = apply(**e, s, where + ".opaque.parameters"); !r) return std::unexpected(r.error().wrap(head));
  }
  return {};
}

}  // namespace gpufrac::dra
