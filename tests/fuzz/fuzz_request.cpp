// Fuzzes the annotation parser. Input: one flag byte (bit 0: aliases on), then "key=value" records
// separated by newlines. Invariants: no crash; the fast path agrees with the parser; a request is
// in range and canonical; a refusal is one bounded line of kind user.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/mig_profile_name.hpp"
#include "core/request.hpp"
#include "fuzz_check.hpp"

using namespace gpufrac;

namespace {

Annotations decode(std::string_view data) {
  Annotations a;
  while (!data.empty()) {
    auto nl = data.find('\n');
    std::string_view record = data.substr(0, nl);
    auto eq = record.find('=');
    a[std::string(record.substr(0, eq))] = eq == std::string_view::npos ? "" : std::string(record.substr(eq + 1));
    if (nl == std::string_view::npos) break;
    data.remove_prefix(nl + 1);
  }
  return a;
}

void check_request(const Request& r) {
  FUZZ_CHECK(!r.describe().empty());
  switch (r.kind) {
    case SizeKind::fraction:
      FUZZ_CHECK(r.fraction > 0 && r.fraction <= kWholeGpuPpm);
      FUZZ_CHECK(parse_fraction(format_fraction(r.fraction)) == r.fraction);
      break;
    case SizeKind::memory:
      FUZZ_CHECK(r.memory_bytes > 0 && r.memory_bytes <= (1ull << 50));
      break;
    case SizeKind::mig_profile:
      FUZZ_CHECK(canonical_mig_profile(r.mig_profile) == r.mig_profile);
      break;
  }
  if (r.gpu) FUZZ_CHECK(r.gpu->index.has_value() != !r.gpu->uuid.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool aliases = (data[0] & 1) != 0;
  const Annotations a = decode(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  const bool fast = has_gpufrac_request(a, aliases);
  auto r = parse_request(a, aliases);
  if (!r) {
    FUZZ_CHECK(fast);
    FUZZ_CHECK(r.error().kind == ErrorKind::user);
    FUZZ_CHECK(r.error().message.find('\n') == std::string::npos);
    FUZZ_CHECK(r.error().message.size() < 1024);
    return 0;
  }
  if (!r->has_value()) {
    FUZZ_CHECK(!fast);
    return 0;
  }
  FUZZ_CHECK(fast);
  check_request(**r);
  return 0;
}
