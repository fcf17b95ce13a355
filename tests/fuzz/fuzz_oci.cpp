// Fuzzes what the hook and the wrapper read from the runtime: the OCI state (stdin) and config.json,
// both through the strict, bounded JSON pass (core/spec/strict_json.hpp). A spec accepted has an
// absolute rootfs; a state accepted has an id and an absolute bundle. The bounds hold on every
// input: with small limits, a document accepted is no larger, no deeper and has no more values
// than the limits allow, and one accepted by the strict pass parses as JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bundle/oci.hpp"
#include "core/spec/strict_json.hpp"
#include "fuzz_check.hpp"

using namespace gpufrac;

namespace {

// Deepest nesting of arrays and objects, outside strings (the input is valid JSON when this runs).
std::size_t depth_of(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    if (c == ']' || c == '}') --depth;
  }
  return deepest;
}

void check_bounds(std::string_view text) {
  const JsonLimits small{.max_bytes = 4096, .max_depth = 8, .max_values = 64};
  if (!check_strict_json(text, "fuzz", small)) return;
  FUZZ_CHECK(text.size() <= small.max_bytes);
  FUZZ_CHECK(depth_of(text) <= small.max_depth);
  auto dom = parse_strict_json(text, "fuzz", small);
  FUZZ_CHECK(dom.has_value());
  std::size_t values = 0;
  auto count = [&](auto&& self, const nlohmann::json& j) -> void {
    ++values;
    if (j.is_structured())
      for (const auto& child : j) self(self, child);
  };
  count(count, *dom);
  FUZZ_CHECK(values <= small.max_values);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto state = bundle::parse_oci_state(text)) FUZZ_CHECK(!state->id.empty() && state->bundle.front() == '/');
  if (auto spec = bundle::parse_bundle_spec(text, "/bundle"))
    FUZZ_CHECK(!spec->rootfs.empty() && spec->rootfs.front() == '/');
  check_bounds(text);
  return 0;
}
