// The ledger's fast reader: a file in exactly the layout ledger_to_json writes (one entry per line,
// keys in the writer's order, no spaces) is scanned straight into a LedgerState, without building a
// JSON document, then checked like the strict reader checks (entry_value_problem, bounds, duplicate
// bookings and records). Its grammar is the writer's own, so what it accepts is what
// ledger_to_json writes for that state (no second serialization to compare: that was a third of a
// read). Any difference, a hand-edited file, an old layout or a damaged one, returns nullopt and
// the strict JSON reader decides and words the error. The fuzzer checks that both readers agree and
// that what the fast reader accepts writes back to the same bytes.
#pragma once

#include <optional>
#include <string_view>

#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

std::optional<LedgerState> scan_canonical_ledger(std::string_view text);

}  // namespace gpufrac
