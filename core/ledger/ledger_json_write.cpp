// The ledger's writer (core/ledger/ledger_json.hpp): one entry, idle record and limit to clear per line,
// every key in a fixed order, at the lowest version that holds the content. The canonical scanner
// (core/ledger/ledger_canonical.cpp) reads exactly this layout back.
#include <algorithm>
#include <string>
#include <string_view>

#include "core/ledger/ledger_json.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

// A JSON string; anything outside printable ASCII is escaped, so the file is always valid JSON.
void append_string(std::string& out, std::string_view s) {
  out.push_back('"');
  const auto plain = [](unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; };
  if (std::all_of(s.begin(), s.end(), plain)) {  // ids, uuids, requests: nothing to escape
    out.append(s);
    out.push_back('"');
    return;
  }
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
}

template <class... Args>
void field(std::string& out, std::string_view prefix, const Args&... value) {
  text::append_to(out, prefix, value...);
}

// `,"key":"value"` (the prefix up to the colon) with the value escaped.
void string_field(std::string& out, std::string_view prefix, std::string_view value) {
  out.append(prefix);
  append_string(out, value);
}

}  // namespace

// Every key with its punctuation is one literal: one append of a known size each.
void append_ledger_entry(std::string& out, const LedgerEntry& e) {
  using namespace std::string_view_literals;
  string_field(out, R"({"container_id":)"sv, e.container_id);
  string_field(out, R"(,"device_key":)"sv, e.device_key);
  string_field(out, R"(,"device_uuid":)"sv, e.device_uuid);
  field(out, R"(,"gpu_index":)"sv, e.gpu_index);
  string_field(out, R"(,"gpu_uuid":)"sv, e.gpu_uuid);
  if (e.mig) {
    text::append_to(out, R"(,"mig":{"gi":)"sv, e.mig->gi, R"(,"ci":)"sv, e.mig->ci);
    string_field(out, R"(,"profile":)"sv, e.mig->profile);
    out += '}';
  } else {
    out.append(R"(,"mig":null)"sv);
  }
  field(out, R"(,"bytes":)"sv, e.bytes);
  field(out, R"(,"exclusive":)"sv, e.exclusive);
  string_field(out, R"(,"request":)"sv, e.request);
  field(out, R"(,"source":")"sv, std::string_view(to_string(e.source)), '"');
  field(out, R"(,"pid":)"sv, e.pid);
  field(out, R"(,"pid_start":)"sv, e.pid_start);
  field(out, R"(,"created":)"sv, e.created);
  if (!e.instance.empty()) string_field(out, R"(,"instance":)"sv, e.instance);
  if (!e.claim.empty()) string_field(out, R"(,"claim":)"sv, e.claim);
  if (e.compute_ppm != 0) {
    field(out, R"(,"compute":)"sv, e.compute_ppm);
    field(out, R"(,"compute_mode":")"sv, std::string_view(to_string(e.compute_mode)), '"');
    field(out, R"(,"priority":")"sv, std::string_view(to_string(e.priority)), '"');
  }
  if (e.driver_limit) append_driver_limit(out, *e.driver_limit);
  if (e.limit_bytes != 0) field(out, R"(,"limit":)"sv, e.limit_bytes);
  if (e.wait_ms != 0) field(out, R"(,"wait_ms":)"sv, e.wait_ms);
  out += '}';
}

void append_driver_limit(std::string& out, const DriverLimit& l) {
  using namespace std::string_view_literals;
  string_field(out, R"(,"driver_limit":{"cgroup":)"sv, l.cgroup);
  text::append_to(out, R"(,"soft":)"sv, l.soft, R"(,"hard":)"sv, l.hard, '}');
}

void append_limit_to_clear(std::string& out, const LimitToClear& r) {
  using namespace std::string_view_literals;
  string_field(out, R"({"gpu":)"sv, r.gpu_uuid);
  string_field(out, R"(,"cgroup":)"sv, r.limit.cgroup);
  text::append_to(out, R"(,"soft":)"sv, r.limit.soft, R"(,"hard":)"sv, r.limit.hard);
  string_field(out, R"(,"owner":)"sv, r.owner);
  text::append_to(out, R"(,"since":)"sv, r.since, '}');
}

void append_idle_record(std::string& out, const MigIdleRecord& r) {
  using namespace std::string_view_literals;
  string_field(out, R"({"uuid":)"sv, r.uuid);
  string_field(out, R"(,"gpu":)"sv, r.gpu_uuid);
  field(out, R"(,"since":)"sv, r.since);
  out += '}';
}

void append_mps_record(std::string& out, const MpsGpuRecord& r) {
  using namespace std::string_view_literals;
  string_field(out, R"({"gpu":)"sv, r.gpu_uuid);
  text::append_to(out, R"(,"since":)"sv, r.since, '}');
}

std::vector<std::string_view> ledger_top_level_keys(int version) {
  if (version >= kLedgerVersionSm) return {"mig_idle", "limits_to_clear", "mps"};
  if (version >= kLedgerVersionDriverLimits) return {"mig_idle", "limits_to_clear"};
  if (version >= kLedgerVersionMigIdle) return {"mig_idle"};
  return {};
}

int ledger_version_for(const LedgerState& state) {
  const auto& entries = state.entries;
  const auto sm = [](const LedgerEntry& e) { return is_sm_share(e.compute_ppm, e.compute_mode); };
  if (!state.mps.empty() || std::any_of(entries.begin(), entries.end(), sm)) return kLedgerVersionSm;
  if (std::any_of(entries.begin(), entries.end(), [](const LedgerEntry& e) { return e.limit_bytes || e.wait_ms; }))
    return kLedgerVersionBurst;
  const auto limited = [](const LedgerEntry& e) { return e.driver_limit.has_value(); };
  if (!state.limits_to_clear.empty() || std::any_of(entries.begin(), entries.end(), limited))
    return kLedgerVersionDriverLimits;
  if (std::any_of(entries.begin(), entries.end(), [](const LedgerEntry& e) { return e.compute_ppm != 0; }))
    return kLedgerVersionCompute;
  if (std::any_of(entries.begin(), entries.end(), [](const LedgerEntry& e) { return e.claim_owned(); }))
    return kLedgerVersionClaims;
  return state.mig_idle.empty() ? kLedgerVersion : kLedgerVersionMigIdle;
}

// One entry (and one idle record) per line: fast to write and easy to read or diff by hand.
std::string ledger_to_json(const LedgerState& state) {
  const int version = ledger_version_for(state);
  std::string out;
  out.reserve(64 + state.entries.size() * 400 + state.mig_idle.size() * 120 + state.limits_to_clear.size() * 200);
  out += text::cat("{\"version\":", version, ",\"entries\":[");
  for (std::size_t i = 0; i < state.entries.size(); ++i) {
    out.append(i == 0 ? std::string_view("\n") : std::string_view(",\n"));
    append_ledger_entry(out, state.entries[i]);
  }
  if (version != kLedgerVersion) {
    out += "\n],\"mig_idle\":[";
    for (std::size_t i = 0; i < state.mig_idle.size(); ++i) {
      out += i == 0 ? "\n" : ",\n";
      append_idle_record(out, state.mig_idle[i]);
    }
  }
  if (version >= kLedgerVersionDriverLimits) {
    out += "\n],\"limits_to_clear\":[";
    for (std::size_t i = 0; i < state.limits_to_clear.size(); ++i) {
      out += i == 0 ? "\n" : ",\n";
      append_limit_to_clear(out, state.limits_to_clear[i]);
    }
  }
  if (version >= kLedgerVersionSm) {
    out += "\n],\"mps\":[";
    for (std::size_t i = 0; i < state.mps.size(); ++i) {
      out += i == 0 ? "\n" : ",\n";
      append_mps_record(out, state.mps[i]);
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace gpufrac
