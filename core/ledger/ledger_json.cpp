#include "core/ledger/ledger_json.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/ledger/ledger_canonical.hpp"
#include "core/ledger/ledger_json_limits.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac {

using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 21> kEntryKeys{
    "container_id", "device_key", "device_uuid",  "gpu_index", "gpu_uuid",     "mig",     "bytes",
    "exclusive",    "request",    "source",       "pid",       "pid_start",    "created", "instance",
    "claim",        "compute",    "compute_mode", "priority",  "driver_limit", "limit",   "wait_ms"};

// Typed field access on one JSON object; remembers the first problem with its dotted path.
class Reader {
 public:
  Reader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  std::uint64_t u64(const char* key, std::uint64_t max) {
    const json* v = field(key);
    if (v == nullptr) return 0;
    if (!v->is_number_unsigned() || v->get<std::uint64_t>() > max)
      return fail(key, text::cat("must be an integer 0-", max)), 0;
    return v->get<std::uint64_t>();
  }
  bool boolean(const char* key) {
    const json* v = field(key);
    if (v != nullptr && !v->is_boolean()) return fail(key, "must be true or false"), false;
    return v != nullptr && v->get<bool>();
  }
  // Printable ASCII of at most max bytes.
  std::string str(const char* key, std::size_t max) {
    const json* v = field(key);
    if (v == nullptr) return "";
    if (!v->is_string()) return fail(key, "must be a string"), "";
    const auto& s = v->get_ref<const std::string&>();
    bool ok = s.size() <= max;
    for (unsigned char c : s) ok = ok && c >= 0x20 && c < 0x7f;
    if (!ok) return fail(key, text::cat("must be printable ASCII of at most ", max, " bytes")), "";
    return s;
  }
  void fail(std::string_view key, std::string_view problem) {
    if (!error_) error_ = text::cat(path_, ".", key, ": ", problem);
  }
  void check(bool ok, std::string_view key, std::string_view problem) {
    if (!ok) fail(key, problem);
  }
  const std::optional<std::string>& error() const { return error_; }

 private:
  const json* field(const char* key) {
    auto it = obj_.find(key);
    if (it == obj_.end()) return fail(key, "missing"), nullptr;
    return &*it;
  }
  const json& obj_;
  std::string path_;
  std::optional<std::string> error_;
};

std::optional<MigRef> read_mig(const json& obj, Reader& parent, const std::string& path) {
  auto it = obj.find("mig");
  if (it == obj.end()) return parent.fail("mig", "missing"), std::nullopt;
  const json& m = *it;
  if (m.is_null()) return std::nullopt;
  if (!m.is_object() || m.size() != 3) return parent.fail("mig", "must be null or {gi, ci, profile}"), std::nullopt;
  Reader r(m, path + ".mig");
  MigRef ref{static_cast<std::uint32_t>(r.u64("gi", UINT32_MAX)), static_cast<std::uint32_t>(r.u64("ci", UINT32_MAX)),
             r.str("profile", ledger_max::kProfile)};
  if (r.error()) return parent.fail("mig", *r.error()), std::nullopt;
  return ref;
}

// "compute", "compute_mode" and "priority": a compute share has all three, other bookings none.
void read_compute(Reader& r, LedgerEntry& e) {
  e.compute_ppm = static_cast<std::uint32_t>(r.u64("compute", kWholeGpuComputePpm));
  r.check(e.compute_ppm != 0, "compute", text::cat("must be an integer 1-", kWholeGpuComputePpm));
  const auto mode = compute_mode_from(r.str("compute_mode", ledger_max::kSource));
  r.check(mode.has_value(), "compute_mode", "must be fair, strict or sm");
  const auto priority = compute_priority_from(r.str("priority", ledger_max::kSource));
  r.check(priority.has_value(), "priority", "must be normal or high");
  e.compute_mode = mode.value_or(ComputeMode::fair);
  e.priority = priority.value_or(ComputePriority::normal);
}

Result<LedgerEntry> read_entry(const json& obj, const std::string& path) {
  if (!obj.is_object()) return internal_error(path + ": must be an object");
  for (const auto& [key, value] : obj.items())
    if (std::find(kEntryKeys.begin(), kEntryKeys.end(), key) == kEntryKeys.end())
      return internal_error(path + ": unknown key " + text::quote(key));
  Reader r(obj, path);
  LedgerEntry e;
  e.container_id = r.str("container_id", ledger_max::kId);
  e.device_key = r.str("device_key", ledger_max::kId);
  e.device_uuid = r.str("device_uuid", ledger_max::kUuid);
  e.gpu_index = static_cast<std::uint32_t>(r.u64("gpu_index", UINT32_MAX));
  e.gpu_uuid = r.str("gpu_uuid", ledger_max::kUuid);
  if (!r.error()) e.mig = read_mig(obj, r, path);
  e.bytes = r.u64("bytes", UINT64_MAX);
  e.exclusive = r.boolean("exclusive");
  e.request = r.str("request", ledger_max::kRequest);
  auto source = booking_source_from(r.str("source", ledger_max::kSource));
  e.pid = static_cast<std::int64_t>(r.u64("pid", kMaxPid));
  e.pid_start = r.u64("pid_start", UINT64_MAX);
  e.created = static_cast<std::int64_t>(r.u64("created", INT64_MAX));
  if (obj.contains("instance"))
    e.instance = r.str("instance", ledger_max::kInstance);                  // absent in ledgers written before it
  if (obj.contains("claim")) e.claim = r.str("claim", ledger_max::kClaim);  // claim-owned bookings only
  if (obj.contains("compute") || obj.contains("compute_mode") || obj.contains("priority")) read_compute(r, e);
  if (obj.contains("limit")) e.limit_bytes = r.u64("limit", UINT64_MAX);  // version 6: burstable memory
  if (obj.contains("wait_ms")) e.wait_ms = static_cast<std::uint32_t>(r.u64("wait_ms", kMaxLedgerWaitMs));
  r.check(!obj.contains("limit") || e.limit_bytes != 0, "limit", "must be above bytes");
  r.check(!obj.contains("wait_ms") || e.wait_ms != 0, "wait_ms", text::cat("must be an integer 1-", kMaxLedgerWaitMs));
  if (obj.contains("driver_limit") && !r.error()) {  // version 5: a limit the driver holds
    auto limit = read_driver_limit(obj.at("driver_limit"), path + ".driver_limit");
    if (!limit) return std::unexpected(limit.error());
    e.driver_limit = std::move(*limit);
  }
  e.source = source.value_or(BookingSource::hook);
  if (auto p = entry_value_problem(e, source.has_value())) r.fail(p->first, p->second);
  if (r.error()) return internal_error(*r.error());
  return e;
}

}  // namespace

std::optional<std::pair<std::string_view, std::string_view>> entry_value_problem(const LedgerEntry& e,
                                                                                 bool source_known) {
  using P = std::pair<std::string_view, std::string_view>;
  if (!validate_container_id(e.container_id)) return P{"container_id", "is not a valid container id"};
  if (!validate_device_key(e.device_key)) return P{"device_key", "is not a valid device key"};
  if (!e.gpu_uuid.starts_with("GPU-")) return P{"gpu_uuid", "must start with GPU-"};
  if (!e.device_uuid.starts_with(e.mig ? "MIG-" : "GPU-"))
    return P{"device_uuid", "must be GPU-<uuid>, or MIG-<uuid> with mig"};
  if (!source_known) return P{"source", "must be hook, wrapper, cdi or dra"};
  if (e.claim_owned() == e.claim.empty()) return P{"claim", "is set exactly on dra bookings"};
  if (!e.claim.empty() && !validate_claim_name(e.claim)) return P{"claim", "is not <namespace>/<name>"};
  if (e.claim_owned() && e.pid != 0) return P{"pid", "must be 0 on a dra booking"};
  if (!validate_optional_instance(e.instance)) return P{"instance", "is not a valid instance"};
  if (e.pid == 0 && e.pid_start != 0) return P{"pid_start", "must be 0 while pid is 0"};
  if (e.compute_ppm > kWholeGpuComputePpm) return P{"compute", "must be an integer 1-1000000"};
  if (e.compute_ppm != 0 && e.mig) return P{"compute", "is never booked on a MIG instance"};
  if (e.compute_ppm == 0 && (e.compute_mode != ComputeMode::fair || e.priority != ComputePriority::normal))
    return P{"compute_mode", "is set only with compute"};
  if (e.driver_limit && driver_limit_problem(*e.driver_limit)) return P{"driver_limit", "is not a valid limit"};
  if (e.limit_bytes != 0 && e.limit_bytes <= e.bytes) return P{"limit", "must be above bytes"};
  if (e.limit_bytes != 0 && (e.exclusive || e.mig)) return P{"limit", "is set only on a share of a GPU"};
  if (e.wait_ms > kMaxLedgerWaitMs) return P{"wait_ms", "must be an integer 1-3600000"};
  if (is_sm_share(e.compute_ppm, e.compute_mode) && e.priority != ComputePriority::normal)
    return P{"priority", "must be normal on an SM share"};
  return std::nullopt;
}

namespace {

Result<MigIdleRecord> read_idle_record(const json& obj, const std::string& path) {
  if (!obj.is_object()) return internal_error(path + ": must be an object");
  if (obj.size() != 3 || !obj.contains("uuid") || !obj.contains("gpu") || !obj.contains("since"))
    return internal_error(path + ": must be {uuid, gpu, since}");
  Reader r(obj, path);
  MigIdleRecord rec{r.str("uuid", ledger_max::kUuid), r.str("gpu", ledger_max::kUuid),
                    static_cast<std::int64_t>(r.u64("since", INT64_MAX))};
  r.check(rec.uuid.starts_with("MIG-"), "uuid", "must start with MIG-");
  r.check(rec.gpu_uuid.starts_with("GPU-"), "gpu", "must start with GPU-");
  if (r.error()) return internal_error(*r.error());
  return rec;
}

Result<std::vector<MigIdleRecord>> read_idle_records(const json& doc, const std::string& name) {
  const json& list = doc.at("mig_idle");
  if (!list.is_array() || list.size() > kMaxLedgerEntries)
    return internal_error(text::cat(name, ": mig_idle must be an array of at most ", kMaxLedgerEntries));
  std::vector<MigIdleRecord> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto rec = read_idle_record(list[i], text::cat("mig_idle[", i, "]"));
    if (!rec) return std::unexpected(rec.error().wrap(name));
    if (!seen.insert(rec->uuid).second)
      return internal_error(text::cat(name, ": mig_idle[", i, "]: a second record of ", rec->uuid));
    out.push_back(std::move(*rec));
  }
  return out;
}

Result<std::vector<MpsGpuRecord>> read_mps_records(const json& doc, const std::string& name) {
  const json& list = doc.at("mps");
  if (!list.is_array() || list.size() > kMaxLedgerEntries)
    return internal_error(text::cat(name, ": mps must be an array of at most ", kMaxLedgerEntries));
  std::vector<MpsGpuRecord> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = text::cat("mps[", i, "]");
    const json& obj = list[i];
    if (!obj.is_object() || obj.size() != 2 || !obj.contains("gpu") || !obj.contains("since"))
      return internal_error(text::cat(name, ": ", path, ": must be {gpu, since}"));
    Reader r(obj, path);
    MpsGpuRecord rec{r.str("gpu", ledger_max::kUuid), static_cast<std::int64_t>(r.u64("since", INT64_MAX))};
    r.check(rec.gpu_uuid.starts_with("GPU-"), "gpu", "must start with GPU-");
    if (r.error()) return internal_error(name + ": " + *r.error());
    if (!seen.insert(rec.gpu_uuid).second)
      return internal_error(text::cat(name, ": ", path, ": a second record of ", rec.gpu_uuid));
    out.push_back(std::move(rec));
  }
  return out;
}

// {version, entries} and the keys of ledger_top_level_keys(version).
Result<int> read_version(const json& doc, const std::string& name) {
  if (!doc.is_object() || !doc.contains("version") || !doc.contains("entries"))
    return internal_error(name + ": not a gpufrac ledger; expected {\"version\": 1, \"entries\": [...]}");
  const json& v = doc.at("version");
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < kLedgerVersion || v.get<std::uint64_t>() > kLedgerVersionMax)
    return internal_error(text::cat(name, ": ledger version ", text::quote(v.dump()), " is not 1 to ",
                                    kLedgerVersionMax, "; it was written by another gpufrac version"));
  const int version = static_cast<int>(v.get<std::uint64_t>());
  const auto keys = ledger_top_level_keys(version);
  bool exact = doc.size() == keys.size() + 2;
  for (auto k : keys) exact = exact && doc.contains(k);
  if (exact) return version;
  if (keys.empty()) return internal_error(name + ": unknown top-level key; expected version and entries");
  std::string list = "version, entries";
  for (std::size_t i = 0; i < keys.size(); ++i) list += text::cat(i + 1 == keys.size() ? " and " : ", ", keys[i]);
  return internal_error(text::cat(name, ": ledger version ", version, " has exactly ", list));
}

Result<LedgerState> read_state(const json& doc, const std::string& name) {
  auto version = read_version(doc, name);
  if (!version) return std::unexpected(version.error());
  const json& entries = doc.at("entries");
  if (!entries.is_array() || entries.size() > kMaxLedgerEntries)
    return internal_error(text::cat(name, ": entries must be an array of at most ", kMaxLedgerEntries));
  LedgerState state;
  std::set<std::tuple<bool, std::string, std::string>> seen;  // (claim?, container key, device key)
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto e = read_entry(entries[i], text::cat("entries[", i, "]"));
    if (!e) return std::unexpected(e.error().wrap(name));
    if (e->claim_owned() && *version < kLedgerVersionClaims)
      return internal_error(text::cat(name, ": entries[", i, "]: a dra booking in a version ", *version, " ledger"));
    if (e->compute_ppm != 0 && *version < kLedgerVersionCompute)
      return internal_error(text::cat(name, ": entries[", i, "]: a compute share in a version ", *version, " ledger"));
    if (is_sm_share(e->compute_ppm, e->compute_mode) && *version < kLedgerVersionSm)
      return internal_error(text::cat(name, ": entries[", i, "]: an SM share in a version ", *version, " ledger"));
    if (e->driver_limit && *version < kLedgerVersionDriverLimits)
      return internal_error(text::cat(name, ": entries[", i, "]: a driver limit in a version ", *version, " ledger"));
    if ((e->limit_bytes != 0 || e->wait_ms != 0) && *version < kLedgerVersionBurst)
      return internal_error(
          text::cat(name, ": entries[", i, "]: a burst limit or wait in a version ", *version, " ledger"));
    if (!seen.emplace(e->claim_owned(), container_key(*e), e->device_key).second)
      return internal_error(text::cat(name, ": entries[", i, "]: a second booking of container ", container_key(*e),
                                      " device key ", text::quote(e->device_key)));
    state.entries.push_back(std::move(*e));
  }
  if (*version != kLedgerVersion) {
    auto idle = read_idle_records(doc, name);
    if (!idle) return std::unexpected(idle.error());
    state.mig_idle = std::move(*idle);
  }
  if (*version >= kLedgerVersionDriverLimits) {
    auto limits = read_limits_to_clear(doc, name);
    if (!limits) return std::unexpected(limits.error());
    state.limits_to_clear = std::move(*limits);
  }
  if (*version >= kLedgerVersionSm) {
    auto mps = read_mps_records(doc, name);
    if (!mps) return std::unexpected(mps.error());
    state.mps = std::move(*mps);
  }
  return state;
}

}  // namespace

json entry_to_json(const LedgerEntry& e) {
  json mig = e.mig ? json{{"gi", e.mig->gi}, {"ci", e.mig->ci}, {"profile", e.mig->profile}} : json(nullptr);
  json j{{"container_id", e.container_id},
         {"device_key", e.device_key},
         {"device_uuid", e.device_uuid},
         {"gpu_index", e.gpu_index},
         {"gpu_uuid", e.gpu_uuid},
         {"mig", std::move(mig)},
         {"bytes", e.bytes},
         {"exclusive", e.exclusive},
         {"request", e.request},
         {"source", to_string(e.source)},
         {"pid", e.pid},
         {"pid_start", e.pid_start},
         {"created", e.created}};
  if (!e.instance.empty()) j["instance"] = e.instance;
  if (!e.claim.empty()) j["claim"] = e.claim;
  if (e.compute_ppm != 0) {
    j["compute"] = e.compute_ppm;
    j["compute_mode"] = to_string(e.compute_mode);
    j["priority"] = to_string(e.priority);
  }
  if (e.driver_limit) j["driver_limit"] = driver_limit_to_json(*e.driver_limit);
  if (e.limit_bytes != 0) j["limit"] = e.limit_bytes;
  if (e.wait_ms != 0) j["wait_ms"] = e.wait_ms;
  return j;
}

json mps_record_to_json(const MpsGpuRecord& r) {
  return json{{"gpu", r.gpu_uuid}, {"since", r.since}};
}

json idle_record_to_json(const MigIdleRecord& r) {
  return json{{"uuid", r.uuid}, {"gpu", r.gpu_uuid}, {"since", r.since}};
}

Result<LedgerState> parse_ledger(std::string_view text, const std::string& name) {
  if (auto state = scan_canonical_ledger(text)) return std::move(*state);
  return parse_ledger_json(text, name);
}

Result<LedgerState> parse_ledger_json(std::string_view text, const std::string& name) {
  try {
    json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) return internal_error(name + ": not valid JSON; move it away and run gpufrac gc");
    return read_state(doc, name);
  } catch (const std::exception& e) {
    return internal_error(name + ": " + e.what());
  }
}

}  // namespace gpufrac
