#include "core/ledger_canonical.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/ledger_json.hpp"

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
      if (v > (max - d) / 10) return fail(), 0;
      v = v * 10 + d;
    }
    if (i_ == from || (s_[from] == '0' && i_ - from > 1)) fail();
    return v;
  }

  bool boolean(std::string_view key) {
    if (!key_of(key, false)) return false;
    if (peek("true")) return lit("true");
    lit("false");
    return false;
  }

  bool key_of(std::string_view key, bool first) { return lit(first ? "{\"" : ",\"") && lit(key) && lit("\":"); }

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
  if (sc.peek(",\"instance\":")) e.instance = sc.str("instance", ledger_max::kInstance);
  if (sc.peek(",\"claim\":")) e.claim = sc.str("claim", ledger_max::kClaim);
  sc.lit("}");
  return e;
}

MigIdleRecord scan_idle(Scanner& sc) {
  MigIdleRecord r;
  r.uuid = sc.str("uuid", ledger_max::kUuid, true);
  r.gpu_uuid = sc.str("gpu", ledger_max::kUuid);
  r.since = static_cast<std::int64_t>(sc.u64("since", kI64));
  sc.lit("}");
  return r;
}

// `[` then items one per line (`\n` before the first, `,\n` before the others), `\n]`. Each item
// must be exactly what `append` writes for the value scanned from it.
template <class Item, class ScanOne, class Append>
std::vector<Item> scan_list(Scanner& sc, ScanOne scan_one, Append append) {
  std::vector<Item> out;
  std::string written;
  sc.lit("[");
  while (sc.ok() && !sc.peek("\n]")) {
    if (out.size() == kMaxLedgerEntries) return sc.fail(), out;  // too many: the strict reader says so
    sc.lit(out.empty() ? "\n" : ",\n");
    const std::size_t from = sc.pos();
    out.push_back(scan_one(sc));
    written.clear();
    append(written, out.back());
    if (sc.ok() && sc.text().substr(from, sc.pos() - from) != written) sc.fail();
  }
  sc.lit("\n]");
  return out;
}

// What the strict reader refuses beyond single values: two bookings of one (owner kind,
// container key, device key), two records of one instance, an idle record's uuid prefixes.
bool unique_and_valid(const LedgerState& s) {
  std::vector<std::tuple<bool, std::string, std::string>> keys;
  keys.reserve(s.entries.size());
  for (const auto& e : s.entries) keys.emplace_back(e.claim_owned(), container_key(e), e.device_key);
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return false;
  std::vector<std::string> idle;
  for (const auto& r : s.mig_idle) {
    if (!r.uuid.starts_with("MIG-") || !r.gpu_uuid.starts_with("GPU-")) return false;
    idle.push_back(r.uuid);
  }
  std::sort(idle.begin(), idle.end());
  return std::adjacent_find(idle.begin(), idle.end()) == idle.end();
}

}  // namespace

std::optional<LedgerState> scan_canonical_ledger(std::string_view text) {
  Scanner sc(text);
  LedgerState state;
  const std::uint64_t version = sc.u64("version", kLedgerVersionClaims, true);
  bool values_ok = true;
  sc.key_of("entries", false);
  state.entries = scan_list<LedgerEntry>(
      sc,
      [&](Scanner& s) {
        std::optional<BookingSource> source;
        LedgerEntry e = scan_entry(s, source);
        values_ok = values_ok && !entry_value_problem(e, source.has_value());
        return e;
      },
      append_ledger_entry);
  if (version != kLedgerVersion) {
    sc.key_of("mig_idle", false);
    state.mig_idle = scan_list<MigIdleRecord>(sc, scan_idle, append_idle_record);
  }
  sc.lit("}\n");
  // Every item was compared with what the writer makes of it; with the version the content calls
  // for, the whole text is ledger_to_json(state).
  if (!sc.done() || !values_ok || version != static_cast<std::uint64_t>(ledger_version_for(state)) ||
      !unique_and_valid(state))
    return std::nullopt;
  return state;
}

}  // namespace gpufrac
