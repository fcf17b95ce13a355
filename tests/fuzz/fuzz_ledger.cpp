// Fuzzes the ledger loader. Invariants: no crash and no escaping exception; a refusal is one line;
// an accepted ledger writes back to text that loads to the same value; the fast reader of the
// writer's layout accepts only what the strict JSON reader accepts, with the same value, only text
// the writer writes for it, and everything the writer writes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/ledger/ledger_canonical.hpp"
#include "core/ledger/ledger_json.hpp"
#include "fuzz_check.hpp"

using namespace gpufrac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto fast = scan_canonical_ledger(text)) {
    auto strict = parse_ledger_json(text, "ledger.json");
    FUZZ_CHECK(strict.has_value());
    FUZZ_CHECK(*strict == *fast);
    FUZZ_CHECK(ledger_to_json(*fast) == text);  // the fast reader's grammar is the writer's
  }
  auto state = parse_ledger(text, "ledger.json");
  if (!state) {
    FUZZ_CHECK(state.error().message.find('\n') == std::string::npos);
    FUZZ_CHECK(state.error().kind == ErrorKind::internal);
    return 0;
  }
  const std::string written = ledger_to_json(*state);
  FUZZ_CHECK(scan_canonical_ledger(written) == state.value());
  auto again = parse_ledger(written, "ledger.json");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *state);
  return 0;
}
