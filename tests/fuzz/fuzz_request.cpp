// Fuzzes the request parser. Input: one flag byte (bit 0: aliases on; bit 1: the records are the
// container's environment, core/request/env_request.hpp, with the same records as annotations when bit 2
// is set too), then "key=value" records separated by newlines. Invariants: no crash; the fast path
// agrees with the parser; a request is in range and canonical (its compute share and GPU count and
// pin list too); a refusal,
// and every warning, is one bounded line of kind user.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/mig/mig_profile_name.hpp"
#include "core/request/env_request.hpp"
#include "core/request/request.hpp"
#include "core/request/unknown_keys.hpp"
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
      // Memory beside a profile only for a compute instance smaller than its GPU instance.
      FUZZ_CHECK(r.memory_bytes == 0 || r.mig_profile.find("c.") != std::string::npos);
      break;
  }
  if (r.gpu) FUZZ_CHECK(r.gpu->index.has_value() != !r.gpu->uuid.empty());
  // Several GPUs: 1 to kMaxGpusPerRequest, never a MIG profile; a pin list is exactly that many
  // distinct GPUs (and then no single pin); gpus alone is whole GPUs.
  FUZZ_CHECK(r.gpu_count() >= 1 && r.gpu_count() <= kMaxGpusPerRequest);
  if (r.gpus) FUZZ_CHECK(r.kind != SizeKind::mig_profile);
  if (!r.gpu_list.empty()) {
    FUZZ_CHECK(!r.gpu && r.gpu_list.size() == r.gpu_count() && r.gpu_list.size() >= 2);
    for (std::size_t i = 0; i < r.gpu_list.size(); ++i)
      for (std::size_t j = i + 1; j < r.gpu_list.size(); ++j) FUZZ_CHECK(!(r.gpu_list[i] == r.gpu_list[j]));
  }
  if (r.gpu) FUZZ_CHECK(r.gpu_count() == 1);
  if (r.sized_by_gpus) FUZZ_CHECK(r.gpus && r.kind == SizeKind::fraction && r.fraction == kWholeGpuPpm);
  // A compute share is a whole percent of a GPU's time, never on a MIG instance; compute alone is
  // also the memory share.
  if (r.compute_ppm)
    FUZZ_CHECK(*r.compute_ppm >= 10'000 && *r.compute_ppm <= 1'000'000 && *r.compute_ppm % 10'000 == 0);
  if (r.kind == SizeKind::mig_profile) FUZZ_CHECK(!r.compute_intent());
  if (r.sized_by_compute) FUZZ_CHECK(r.kind == SizeKind::fraction && r.compute_ppm == r.fraction);
}

std::vector<std::string> as_env(std::string_view data) {
  std::vector<std::string> env;
  for (std::size_t start = 0; start <= data.size();) {
    const std::size_t nl = std::min(data.find('\n', start), data.size());
    env.emplace_back(data.substr(start, nl - start));
    start = nl + 1;
  }
  return env;
}

bool one_bounded_line(const std::string& s) {
  return s.find('\n') == std::string::npos && s.size() < 1024;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool aliases = (data[0] & 1) != 0;
  const bool by_env = (data[0] & 2) != 0;
  const std::string_view records(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Annotations a = by_env && (data[0] & 4) == 0 ? Annotations{} : decode(records);
  const std::vector<std::string> env = by_env ? as_env(records) : std::vector<std::string>{};
  // Names that look like a request and are none: one bounded line each; under warn the unknown
  // annotations are dropped and none is left, under refuse the first is the refusal.
  const auto unknown = unknown_request_names(a, env);
  for (const auto& u : unknown) {
    FUZZ_CHECK(one_bounded_line(u.message));
    FUZZ_CHECK(u.annotation.empty() || a.contains(u.annotation));
  }
  Annotations warned = a;
  auto lines = check_request_names(warned, env, UnknownNames::warn);
  FUZZ_CHECK(lines && lines->size() == unknown.size());
  FUZZ_CHECK(unknown_request_names(warned, {}).empty());
  Annotations refused = a;
  auto refusal = check_request_names(refused, env, UnknownNames::refuse);
  FUZZ_CHECK(unknown.empty() ? refusal.has_value() : (!refusal && refusal.error().message == unknown[0].message));
  const bool fast = has_container_request(a, env, aliases);
  auto r = parse_container_request(a, env, aliases);
  if (!r) {
    FUZZ_CHECK(fast);
    FUZZ_CHECK(r.error().kind == ErrorKind::user);
    FUZZ_CHECK(one_bounded_line(r.error().message));
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
