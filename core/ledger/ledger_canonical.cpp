#include "core/ledger/ledger_canonical.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "core/ledger/ledger_json.hpp"
#include "core/ledger/ledger_json_limits.hpp"
#include "core/request/compute_share.hpp"

namespace gpufrac {

namespace {

// Exact-layout scanning: the first mismatch clears ok, and every later read returns a default.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && i_ == s_.size(); }
  std::size_t pos() const { return i_; }
  std::string_view text() const { return s_; }

  bool lit(std::string_view l) {
    if (ok_ && s_.compare(i_, l.size(), l) == 0) {
      i_ += l.size();
      return true;
    }
    return ok_ = false;
  }
  bool peek(std::string_view l) const { return ok_ && s_.compare(i_, l.size(), l) == 0; }

  // `,"key":` (`{"key":` for an object's first field), then a string of printable ASCII of at
  // most max bytes; escapes \" and \\ only, as the writer makes them.
  std::string str(std::string_view key, std::size_t max, bool first = false) {
    if (!key_of(key, first) || !lit("\"")) return {};
    const std::size_t end = s_.find('"', i_);
    const std::string_view v = s_.substr(i_, end == std::string_view::npos ? 0 : end - i_);
    if (end != std::string_view::npos && v.size() <= max && v.find('\\') == std::string_view::npos) {  // one copy
      if (!std::all_of(v.begin(), v.end(), [](unsigned char c) { return c >= 0x20 && c < 0x7f; })) return fail();
      i_ = end + 1;
      return std::string(v);
    }
    std::string out;
    while (ok_ && i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\\')) return fail();
        c = s_[i_++];
      }
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) return fail();
      out.push_back(c);
    }
    if (!lit("\"") || out.size() > max) return fail();
    return out;
  }

  // `,"key":` (`{"key":` first) then digits without a leading zero, at most max.
  std::uint64_t u64(std::string_view key, std::uint64_t max, bool first = false) {
    if (!key_of(key, first)) return 0;
    const std::size_t from = i_;
    std::uint64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      const auto d = static_cast<std::uint64_t>(s_[i_++] - '0');
      if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, d, &v)) return fail(), 0;
    }
    if (i_ == from || (s_[from] == '0' && i_ - from > 1) || v > max) fail();
    return v;
  }

  bool boolean(std::string_view key) {
    if (!key_of(key, false)) return false;
    if (peek("true")) return lit("true");
    lit("false");
    return false;
  }

  // `{"key":` or `,"key":` in one comparison of the key.
  bool key_of(std::string_view key, bool first) {
    const std::size_t n = key.size();
    if (ok_ && s_.size() - i_ >= n + 4 && s_[i_] == (first ? '{' : ',') && s_[i_ + 1] == '"' &&
        std::memcmp(s_.data() + i_ + 2, key.data(), n) == 0 && s_[i_ + 2 + n] == '"' && s_[i_ + 3 + n] == ':') {
      i_ += n + 4;
      return true;
    }
    return ok_ = false;
  }

  // Gives up on the text: the strict reader decides.
  std::string fail() {
    ok_ = false;
    return {};
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
  bool ok_ = true;
};

constexpr std::uint64_t kU32 = UINT32_MAX, kI64 = INT64_MAX;

std::optional<MigRef> scan_mig(Scanner& sc) {
  if (!sc.key_of("mig", false) || sc.peek("null")) return sc.lit("null"), std::nullopt;
  MigRef m;
  m.gi = static_cast<std::uint32_t>(sc.u64("gi", kU32, true));
  m.ci = static_cast<std::uint32_t>(sc.u64("ci", kU32));
  m.profile = sc.str("profile", ledger_max::kProfile);
  sc.lit("}");
  return m;
}

// `,"compute":<ppm>,"compute_mode":"<mode>","priority":"<priority>"`, written only for a share.
void scan_compute(Scanner& sc, LedgerEntry& e) {
  e.compute_ppm = static_cast<std::uint32_t>(sc.u64("compute", kWholeGpuComputePpm));
  const auto mode = compute_mode_from(sc.str("compute_mode", ledger_max::kSource));
  const auto priority = compute_priority_from(sc.str("priority", ledger_max::kSource));
  if (e.compute_ppm == 0 || !mode || !priority) return static_cast<void>(sc.fail());
  e.compute_mode = *mode;
  e.priority = *priority;
}

// `,"driver_limit":{"cgroup":"<path>","soft":<bytes>,"hard":<bytes>}`, written only for a limit the driver holds.
DriverLimit scan_driver_limit(Scanner& sc) {
  sc.key_of("driver_limit", false);
  DriverLimit l;
  l.cgroup = sc.str("cgroup", ledger_max::kCgroup, true);
  l.soft = sc.u64("soft", UINT64_MAX);
  l.hard = sc.u64("hard", UINT64_MAX);
  sc.lit("}");
  return l;
}

LedgerEntry scan_entry(Scanner& sc, std::optional<BookingSource>& source) {
  LedgerEntry e;
  e.container_id = sc.str("container_id", ledger_max::kId, true);
  e.device_key = sc.str("device_key", ledger_max::kId);
  e.device_uuid = sc.str("device_uuid", ledger_max::kUuid);
  e.gpu_index = static_cast<std::uint32_t>(sc.u64("gpu_index", kU32));
  e.gpu_uuid = sc.str("gpu_uuid", ledger_max::kUuid);
  e.mig = scan_mig(sc);
  e.bytes = sc.u64("bytes", UINT64_MAX);
  e.exclusive = sc.boolean("exclusive");
  e.request = sc.str("request", ledger_max::kRequest);
  source = booking_source_from(sc.str("source", ledger_max::kSource));
  e.source = source.value_or(BookingSource::hook);
  e.pid = static_cast<std::int64_t>(sc.u64("pid", kMaxPid));
  e.pid_start = sc.u64("pid_start", UINT64_MAX);
  e.created = static_cast<std::int64_t>(sc.u64("created", kI64));
  // The writer leaves both out when empty.
  if (sc.peek(",\"instance\":") && (e.instance = sc.str("instance", ledger_max::kInstance)).empty()) sc.fail();
  if (sc.peek(",\"claim\":") && (e.claim = sc.str("claim", ledger_max::kClaim)).empty()) sc.fail();
  if (sc.peek(",\"compute\":")) scan_compute(sc, e);
  if (sc.peek(",\"driver_limit\":")) e.driver_limit = scan_driver_limit(sc);
  // Version 6, each only when set (0 is never written).
  if (sc.peek(",\"limit\":") && (e.limit_bytes = sc.u64("limit", UINT64_MAX)) == 0) sc.fail();
  if (sc.peek(",\"wait_ms\":") && (e.wait_ms = static_cast<std::uint32_t>(sc.u64("wait_ms", kMaxLedgerWaitMs))) == 0)
    sc.fail();
  sc.lit("}");
  return e;
}

LimitToClear scan_limit_to_clear(Scanner& sc) {
  LimitToClear r;
  r.gpu_uuid = sc.str("gpu", ledger_max::kUuid, true);
  r.limit.cgroup = sc.str("cgroup", ledger_max::kCgroup);
  r.limit.soft = sc.u64("soft", UINT64_MAX);
  r.limit.hard = sc.u64("hard", UINT64_MAX);
  r.owner = sc.str("owner", ledger_max::kId + 1 + ledger_max::kInstance);
  r.since = static_cast<std::int64_t>(sc.u64("since", kI64));
  sc.lit("}");
  return r;
}

MpsGpuRecord scan_mps(Scanner& sc) {
  MpsGpuRecord r;
  r.gpu_uuid = sc.str("gpu", ledger_max::kUuid, true);
  r.since = static_cast<std::int64_t>(sc.u64("since", kI64));
  sc.lit("}");
  return r;
}

MigIdleRecord scan_idle(Scanner& sc) {
  MigIdleRecord r;
  r.uuid = sc.str("uuid", ledger_max::kUuid, true);
  r.gpu_uuid = sc.str("gpu", ledger_max::kUuid);
  r.since = static_cast<std::int64_t>(sc.u64("since", kI64));
  sc.lit("}");
  return r;
}

// `[` then items one per line (`\n` before the first, `,\n` before the others), `\n]`.
template <class Item, class ScanOne>
std::vector<Item> scan_list(Scanner& sc, ScanOne scan_one) {
  std::vector<Item> out;
  sc.lit("[");
  while (sc.ok() && !sc.peek("\n]")) {
    if (out.size() == kMaxLedgerEntries) return sc.fail(), out;  // too many: the strict reader says so
    sc.lit(out.empty() ? "\n" : ",\n");
    out.push_back(scan_one(sc));
  }
  sc.lit("\n]");
  return out;
}

// Whether two entries share (owner kind, container key, device key): an open-addressing table of
// entry indices, linear in the entries (no sort, no node per entry). (id, instance) stands for
// container_key(e): a valid id holds no '@'.
bool duplicate_booking(const std::vector<LedgerEntry>& entries) {
  using Key = std::tuple<bool, std::string_view, std::string_view, std::string_view>;
  const auto key = [&](std::uint32_t i) {
    const LedgerEntry& e = entries[i];
    return Key(e.claim_owned(), e.container_id, e.instance, e.device_key);
  };
  const auto hash = [](const Key& k) {
    const std::hash<std::string_view> h;
    return h(std::get<1>(k)) ^ (h(std::get<2>(k)) * 0x9e3779b97f4a7c15ull) ^ (h(std::get<3>(k)) * 31) ^
           static_cast<std::size_t>(std::get<0>(k));
  };
  constexpr std::uint32_t kFree = UINT32_MAX;
  const std::size_t mask = std::bit_ceil(entries.size() * 2 + 1) - 1;
  std::vector<std::uint32_t> table(mask + 1, kFree);
  for (std::uint32_t i = 0; i < entries.size(); ++i) {
    const Key k = key(i);
    std::size_t at = hash(k) & mask;
    for (; table[at] != kFree; at = (at + 1) & mask)
      if (key(table[at]) == k) return true;
    table[at] = i;
  }
  return false;
}

// What the strict reader refuses beyond single values: two bookings of one (owner kind,
// container key, device key), two records of one instance, an idle record's uuid prefixes.
bool unique_and_valid(const LedgerState& s) {
  if (duplicate_booking(s.entries)) return false;
  std::vector<std::string> idle;
  for (const auto& r : s.mig_idle) {
    if (!r.uuid.starts_with("MIG-") || !r.gpu_uuid.starts_with("GPU-")) return false;
    idle.push_back(r.uuid);
  }
  std::sort(idle.begin(), idle.end());
  if (std::adjacent_find(idle.begin(), idle.end()) != idle.end()) return false;
  for (const auto& r : s.limits_to_clear)
    if (limit_to_clear_problem(r)) return false;
  std::vector<std::string_view> mps;
  for (const auto& r : s.mps) {
    if (!r.gpu_uuid.starts_with("GPU-")) return false;
    mps.push_back(r.gpu_uuid);
  }
  std::sort(mps.begin(), mps.end());
  if (std::adjacent_find(mps.begin(), mps.end()) != mps.end()) return false;
  return !duplicate_limits_to_clear(s.limits_to_clear);
}

}  // namespace

std::optional<LedgerState> scan_canonical_ledger(std::string_view text) {
  Scanner sc(text);
  LedgerState state;
  const std::uint64_t version = sc.u64("version", kLedgerVersionMax, true);
  bool values_ok = true;
  sc.key_of("entries", false);
  state.entries = scan_list<LedgerEntry>(sc, [&](Scanner& s) {
    std::optional<BookingSource> source;
    LedgerEntry e = scan_entry(s, source);
    values_ok = values_ok && !entry_value_problem(e, source.has_value());
    return e;
  });
  if (version != kLedgerVersion) {
    sc.key_of("mig_idle", false);
    state.mig_idle = scan_list<MigIdleRecord>(sc, scan_idle);
  }
  if (version >= kLedgerVersionDriverLimits) {
    sc.key_of("limits_to_clear", false);
    state.limits_to_clear = scan_list<LimitToClear>(sc, scan_limit_to_clear);
  }
  if (version >= kLedgerVersionSm) {
    sc.key_of("mps", false);
    state.mps = scan_list<MpsGpuRecord>(sc, scan_mps);
  }
  sc.lit("}\n");
  // The grammar is the writer's: keys in its order, no spaces, numbers without leading zeros,
  // strings of printable ASCII escaping only " and \\, optional fields only when not empty; with
  // the version the content calls for, the text is ledger_to_json(state).
  if (!sc.done() || !values_ok || version != static_cast<std::uint64_t>(ledger_version_for(state)) ||
      !unique_and_valid(state))
    return std::nullopt;
  return state;
}

}  // namespace gpufrac
