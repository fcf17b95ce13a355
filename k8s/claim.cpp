#include "k8s/claim.hpp"

#include "core/mig/mig_profile_name.hpp"
#include "core/quantity.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"
#include "k8s/claim_config.hpp"
#include "k8s/dra_devices.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxResults = 32;

std::string string_at(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

const json* path(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object() || !at->contains(k)) return nullptr;
    at = &(*at)[k];
  }
  return at;
}

// The booking for a result on device d: the larger of its consumed memory and its consumed fraction
// of the GPU (a claim names one; the scheduler fills the other with its default), or the whole device.
Request booking_for(const DraDevice& d, std::uint64_t bytes, Ppm ppm) {
  Request r;
  r.gpu = GpuPin{d.gpu->index, "", d.mig ? d.mig->uuid : ""};
  if (d.whole()) {
    r.kind = SizeKind::mig_profile;
    r.mig_profile = canonical_mig_profile_or_same(d.device_profile());
    if (d.profile) r.gpu->mig_start = d.placement_start;
  } else if (ppm != 0 && (ppm == kWholeGpuPpm || fraction_bytes(d.gpu->memory_bytes, ppm) > bytes)) {
    r.kind = SizeKind::fraction;
    r.fraction = ppm;
  } else if (bytes == 0 || bytes == d.gpu->memory_bytes) {
    r.kind = SizeKind::fraction;
    r.fraction = kWholeGpuPpm;
  } else {
    r.kind = SizeKind::memory;
    r.memory_bytes = bytes;
  }
  return r;
}

// consumedCapacity.memory: a quantity of bytes, above 0 and within the device.
Result<std::uint64_t> consumed_memory(const json& mem, const std::string& where, const DraDevice& d) {
  const std::string at = where + ".consumedCapacity.memory: ";
  if (!mem.is_string()) return user_error(at + "not a quantity string");
  auto bytes = parse_k8s_quantity(mem.get<std::string>());
  if (!bytes) return user_error(at + bytes.error().message);
  if (*bytes == 0 || *bytes > d.memory_bytes())
    return user_error(
        text::cat(at, k8s_quantity(*bytes), " is beyond ", d.name, " (", k8s_quantity(d.memory_bytes()), ")"));
  return bytes;
}

// consumedCapacity.fraction: parts per million of the GPU, 1 to 1M.
Result<Ppm> consumed_fraction(const json& value, const std::string& where, const DraDevice& d) {
  const std::string at = where + ".consumedCapacity.fraction: ";
  if (!value.is_string()) return user_error(at + "not a quantity string");
  auto n = parse_k8s_quantity(value.get<std::string>());
  if (!n || *n == 0 || *n > kWholeGpuPpm)
    return user_error(text::cat(at, text::quote(value.get<std::string>()), " is not a share of ", d.name,
                                "; a fraction is 1 to 1M parts per million (250k is a quarter)"));
  return static_cast<Ppm>(*n);
}

// consumedCapacity.compute of a share: percent of the GPU's time, 0 to kComputeCapacity; 0 (the
// policy's default, for a claim that asks for none) leaves the request to the default share.
Result<std::optional<std::uint32_t>> consumed_compute(const json& result, const DraDevice& device,
                                                      const std::string& where) {
  const json* compute = path(result, {"consumedCapacity", "compute"});
  if (compute == nullptr) return std::optional<std::uint32_t>{};
  const std::string field = where + ".consumedCapacity.compute: ";
  if (device.whole())
    return user_error(text::cat(field, "a MIG device owns its share of the GPU's time; ask for compute on gpu-<i>"));
  const std::string text = compute->is_string() ? compute->get<std::string>() : compute->dump();
  const auto v = text::parse_u64(text);
  if (!compute->is_string() || !v || text.size() > 3 || (text.size() > 1 && text[0] == '0') || *v > kComputeCapacity)
    return user_error(text::cat(field, text::quote(text), " is not a percent of the GPU's time; use an integer 0 to ",
                                kComputeCapacity, " (0: the default share)"));
  if (*v == 0) return std::optional<std::uint32_t>{};
  return std::optional<std::uint32_t>(static_cast<std::uint32_t>(*v) * kPpmPerPercent);
}

Result<ClaimShare> share_of(const json& result, const ClaimRef& ref, const std::string& node, const Inventory& inv,
                            const MigConfig& mig, std::size_t i) {
  const std::string where = text::cat("claim ", ref.describe(), ": status.allocation.devices.results[", i, "]");
  const std::string pool = string_at(result, "pool");
  if (pool != node)
    return user_error(
        text::cat(where, ".pool: ", text::quote(pool), " is not this node's pool; use ", text::quote(node)));
  ClaimShare s;
  s.device = string_at(result, "device");
  auto device = find_dra_device(inv, s.device, mig);
  if (!device) return user_error(text::cat(where, ".device: ", text::quote(s.device), " is not a device of ", node));
  s.request = string_at(result, "request").substr(0, string_at(result, "request").find('/'));
  s.share_id = string_at(result, "shareID");
  if (!s.share_id.empty() && (device->whole() || s.share_id.size() > 64 ||
                              s.share_id.find_first_not_of("0123456789abcdef-") != std::string::npos))
    return user_error(text::cat(where, ".shareID: ", text::quote(s.share_id),
                                device->whole() ? " on a device allocated whole" : " is not a UUID"));
  s.bytes = device->memory_bytes();
  Ppm ppm = 0;
  if (const json* mem = path(result, {"consumedCapacity", "memory"}); mem && !device->whole())
    GPUFRAC_TRY_ASSIGN(s.bytes, consumed_memory(*mem, where, *device));
  if (const json* f = path(result, {"consumedCapacity", kFractionCapacity}); f && !device->whole())
    GPUFRAC_TRY_ASSIGN(ppm, consumed_fraction(*f, where, *device));
  s.booking = booking_for(*device, s.bytes, ppm);
  if (ppm != 0 && s.booking.kind == SizeKind::fraction) s.bytes = fraction_bytes(device->memory_bytes(), ppm);
  auto compute = consumed_compute(result, *device, where);
  if (!compute) return std::unexpected(compute.error());
  s.booking.compute_ppm = *compute;
  s.dynamic_mig = device->profile != nullptr;
  return s;
}

}  // namespace

Result<std::vector<ClaimShare>> claim_shares(const json& claim, const ClaimRef& ref, const std::string& node,
                                             const Inventory& inventory, const MigConfig& mig) {
  const std::string uid = claim.is_object() ? string_at(claim.value("metadata", json::object()), "uid") : "";
  if (uid != ref.uid)
    return user_error(text::cat("claim ", ref.ns, "/", ref.name, ": metadata.uid ", text::quote(uid),
                                " is not the kubelet's ", text::quote(ref.uid), " (the claim was replaced)"));
  const json* results = path(claim, {"status", "allocation", "devices", "results"});
  if (!path(claim, {"status", "allocation"}))
    return user_error(text::cat("claim ", ref.describe(), ": not allocated (no status.allocation)"));
  if (results && !results->is_array())
    return user_error(text::cat("claim ", ref.describe(), ": status.allocation.devices.results is not a list"));
  if (results && results->size() > kMaxResults)
    return user_error(
        text::cat("claim ", ref.describe(), ": ", results->size(), " allocation results; at most ", kMaxResults));
  std::vector<ClaimShare> out;
  for (std::size_t i = 0; results && i < results->size(); ++i) {
    if (string_at((*results)[i], "driver") != kDriverName) continue;
    auto s = share_of((*results)[i], ref, node, inventory, mig, i);
    if (!s) return std::unexpected(s.error());
    out.push_back(std::move(*s));
  }
  if (auto r = apply_claim_config(claim, ref, out); !r) return std::unexpected(r.error());  // e.g. computeMode sm
  return out;
}

bool claim_gone(int status, const json& body, const std::string& uid) {
  if (status == 404) return true;
  if (status != 200) return false;
  const json* found = path(body, {"metadata", "uid"});
  return found != nullptr && found->is_string() && !found->get_ref<const std::string&>().empty() &&
         found->get_ref<const std::string&>() != uid;
}

}  // namespace gpufrac::dra
