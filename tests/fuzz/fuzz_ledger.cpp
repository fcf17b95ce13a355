// Fuzzes the ledger loader. Invariants: no crash and no escaping exception; a refusal is one line;
// an accepted ledger writes back to text that loads to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/ledger_json.hpp"
#include "fuzz_check.hpp"

using namespace gpufrac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto state = parse_ledger(std::string_view(reinterpret_cast<const char*>(data), size), "ledger.json");
  if (!state) {
    FUZZ_CHECK(state.error().message.find('\n') == std::string::npos);
    FUZZ_CHECK(state.error().kind == ErrorKind::internal);
    return 0;
  }
  auto again = parse_ledger(ledger_to_json(*state), "ledger.json");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *state);
  return 0;
}
