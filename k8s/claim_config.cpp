#include "k8s/claim_config.hpp"

#include <algorithm>

#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;

constexpr const char* kParametersForm =
    "{\"apiVersion\": \"gpufrac.io/v1\", \"kind\": \"ShareConfig\", \"computeMode\": \"sm\"} (computeMode fair, "
    "strict or sm)";

// A parameter's value as a message shows it: a string quoted, anything else as JSON, quoted.
std::string value_text(const json& v) {
  return text::quote(v.is_string() ? v.get<std::string>() : v.dump());
}

struct Entry {
  std::vector<std::string> requests;  // empty: every request
  ComputeMode mode = ComputeMode::fair;
};

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
  const json& p = (*opaque)["parameters"];
  const std::string at = where + ".opaque.parameters";
  if (!p.is_object()) return user_error(text::cat(at, ": is not an object; use ", kParametersForm));
  for (const auto& [key, value] : p.items()) {
    const bool known = (key == "apiVersion" && value == "gpufrac.io/v1") || (key == "kind" && value == "ShareConfig") ||
                       key == "computeMode";
    if (!known)
      return user_error(
          text::cat(at, ".", text::quote(key), ": ", value_text(value), " is not accepted; use ", kParametersForm));
  }
  const json mode = p.value("computeMode", json());
  const auto parsed = mode.is_string() ? compute_mode_from(mode.get<std::string>()) : std::nullopt;
  if (!parsed)
    return user_error(
        text::cat(at, ".computeMode: ", value_text(mode), " is not a compute mode; use ", kComputeModeForm));
  e.mode = *parsed;
  return std::optional<Entry>(std::move(e));
}

Result<> apply(const Entry& e, ClaimShare& s, const ClaimRef& ref, const std::string& where) {
  if (!e.requests.empty() && std::find(e.requests.begin(), e.requests.end(), s.request) == e.requests.end()) return {};
  if (e.mode != ComputeMode::sm) {
    s.booking.compute_mode = e.mode;
    return {};
  }
  const std::string head =
      text::cat("claim ", ref.describe(), ": ", where, ".opaque.parameters.computeMode: sm on ", s.device);
  if (s.booking.kind == SizeKind::mig_profile)
    return user_error(head + ": a MIG device owns its SMs; an SM share takes a share of gpu-<i>");
  if (!s.booking.compute_ppm)
    return user_error(head +
                      " needs a compute request, the percent of the GPU's SMs (capacity requests compute: "
                      "\"30\")");
  s.booking.compute_mode = ComputeMode::sm;
  return {};
}

}  // namespace

Result<> apply_claim_config(const json& claim, const ClaimRef& ref, std::vector<ClaimShare>& shares) {
  const json* config = claim.is_object() ? &claim : nullptr;
  for (const char* k : {"status", "allocation", "devices", "config"}) {
    if (config == nullptr || !config->is_object() || !config->contains(k)) return {};
    config = &(*config)[k];
  }
  if (!config->is_array())
    return user_error(text::cat("claim ", ref.describe(), ": status.allocation.devices.config is not a list"));
  for (std::size_t i = 0; i < config->size(); ++i) {
    const std::string where = text::cat("status.allocation.devices.config[", i, "]");
    auto e = entry_of((*config)[i], where);
    if (!e) return std::unexpected(e.error().wrap("claim " + ref.describe()));
    if (!*e) continue;
    for (auto& s : shares)
      if (auto r = apply(**e, s, ref, where); !r) return r;
  }
  return {};
}

}  // namespace gpufrac::dra
