// The ledger file's JSON form: {"version": 1, "entries": [{...}, ...]}, or version 2 with the idle
// records of dynamic MIG instances: {"version": 2, "entries": [...], "mig_idle": [{"uuid": "MIG-...",
// "gpu": "GPU-...", "since": 1700000000}, ...]}; version 3 adds claim bookings (source dra, "claim"),
// version 4 compute shares (an entry's "compute": ppm 1-1000000, "compute_mode": fair|strict,
// "priority": normal|high, all three or none, never on a MIG instance), version 5 driver limits (an
// entry's "driver_limit" and the top-level "limits_to_clear": core/ledger/ledger_json_limits.hpp),
// version 6 burstable memory (an entry's "limit" and "wait_ms"), version 7 SM shares (compute_mode
// "sm") and the GPUs in MPS mode (top-level "mps").
// Migration: every version loads; the writer writes the lowest version that holds the content, so
// a node that never uses a feature keeps files older binaries read, and an older binary refuses a
// file with what it does not know rather than dropping it. The loader is strict (exact keys,
// types, bounds, valid ids, no duplicate bookings or records): a ledger is written only by
// gpufrac, so anything else is a damaged file and is reported, never half-read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

inline constexpr int kLedgerVersion = 1;         // bookings only
inline constexpr int kLedgerVersionMigIdle = 2;  // bookings and idle dynamic MIG records
inline constexpr int kLedgerVersionClaims = 3;   // as 2, and bookings of Kubernetes claims (source dra)
inline constexpr int kLedgerVersionCompute = 4;  // as 3, and compute shares (compute, compute_mode, priority)
// As 4, and driver limits: an entry's "driver_limit" and the top-level "limits_to_clear"
// (core/ledger/ledger_limits.hpp). The top-level keys of each version: ledger_top_level_keys.
inline constexpr int kLedgerVersionDriverLimits = 5;
// As 5, and burstable memory: an entry's "limit" (bytes above its "bytes", the request) and
// "wait_ms" (gpufrac.io/on-limit: wait), each only when set.
inline constexpr int kLedgerVersionBurst = 6;
// As 6, and SM sharing: an entry's compute_mode "sm" and the top-level "mps", the GPUs in MPS mode
// ({"gpu": "GPU-...", "since": 1700000000}; core/ledger/ledger_mps.hpp).
inline constexpr int kLedgerVersionSm = 7;
inline constexpr int kLedgerVersionMax = kLedgerVersionSm;
// The longest on-limit wait a ledger holds (an hour).
inline constexpr std::uint32_t kMaxLedgerWaitMs = 3'600'000;
inline constexpr std::size_t kMaxLedgerEntries = 65536;
// The bounds on string fields (bytes of printable ASCII) both readers apply.
namespace ledger_max {
inline constexpr std::size_t kId = 128;  // container_id, device_key
inline constexpr std::size_t kUuid = 96, kProfile = 64, kRequest = 512, kSource = 16, kInstance = 64;
inline constexpr std::size_t kClaim = 317;  // <namespace (63)>/<name (253)>
inline constexpr std::size_t kCgroup = 1024;
}  // namespace ledger_max

// The writer (core/ledger/ledger_json_write.cpp).
std::string ledger_to_json(const LedgerState& state);
// The version ledger_to_json writes for this content (7 with an SM share or a GPU in MPS mode, 6
// with a burst limit or an on-limit wait, 5 with a driver limit or a limit to clear, 4
// with a compute share, 3 with a claim, 2 with an idle record, else 1),
// and one entry or idle record exactly as it writes them (appended to out).
int ledger_version_for(const LedgerState& state);
void append_ledger_entry(std::string& out, const LedgerEntry& e);
void append_idle_record(std::string& out, const MigIdleRecord& r);
void append_driver_limit(std::string& out, const DriverLimit& l);  // `,"driver_limit":{...}`
void append_limit_to_clear(std::string& out, const LimitToClear& r);
void append_mps_record(std::string& out, const MpsGpuRecord& r);
// The top-level keys a ledger of `version` has, besides "version" and "entries".
std::vector<std::string_view> ledger_top_level_keys(int version);
// One entry as the ledger stores it (also used by `gpufrac status --json` and `gc --json`).
nlohmann::json entry_to_json(const LedgerEntry& e);
nlohmann::json idle_record_to_json(const MigIdleRecord& r);
nlohmann::json driver_limit_to_json(const DriverLimit& l);
nlohmann::json limit_to_clear_to_json(const LimitToClear& r);
nlohmann::json mps_record_to_json(const MpsGpuRecord& r);
// name is the file, for messages. An error is internal (exit 2): the file is damaged or newer.
// A file in exactly the layout ledger_to_json writes is read by a scanner without a JSON document
// (core/ledger/ledger_canonical.hpp, ~10x faster); anything else by the strict JSON reader. Both apply
// the same checks, and the fuzzer holds them to the same answer.
Result<LedgerState> parse_ledger(std::string_view text, const std::string& name);
// The strict JSON reader alone (what parse_ledger falls back to).
Result<LedgerState> parse_ledger_json(std::string_view text, const std::string& name);

// The checks on an entry's values both readers apply, in order: the first problem as (field,
// problem), or nullopt. `source_known`: the source string named a BookingSource.
std::optional<std::pair<std::string_view, std::string_view>> entry_value_problem(const LedgerEntry& e,
                                                                                 bool source_known);

}  // namespace gpufrac
