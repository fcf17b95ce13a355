// The ledger file's JSON form: {"version": 1, "entries": [{...}, ...]}. The loader is strict
// (exact keys, types, bounds, valid ids, no duplicate bookings): a ledger is written only by
// gpufrac, so anything else is a damaged file and is reported, never half-read.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"
#include "core/ledger_entry.hpp"

namespace gpufrac {

inline constexpr int kLedgerVersion = 1;
inline constexpr std::size_t kMaxLedgerEntries = 65536;

std::string ledger_to_json(const LedgerState& state);
// One entry as the ledger stores it (also used by `gpufrac status --json` and `gc --json`).
nlohmann::json entry_to_json(const LedgerEntry& e);
// name is the file, for messages. An error is internal (exit 2): the file is damaged or newer.
Result<LedgerState> parse_ledger(std::string_view text, const std::string& name);

}  // namespace gpufrac
