// Fuzzes what the hook and the wrapper read from the runtime: the OCI state (stdin) and config.json,
// both through the strict, bounded JSON pass (core/strict_json.hpp). A spec accepted has an
// absolute rootfs; a state accepted has an id and an absolute bundle.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"
#include "hook/oci.hpp"

using namespace gpufrac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto state = hook::parse_oci_state(text)) FUZZ_CHECK(!state->id.empty() && state->bundle.front() == '/');
  if (auto spec = hook::parse_bundle_spec(text, "/bundle"))
    FUZZ_CHECK(!spec->rootfs.empty() && spec->rootfs.front() == '/');
  return 0;
}
