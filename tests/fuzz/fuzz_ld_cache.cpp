// Fuzzes the loader-cache parser (a driver root's /etc/ld.so.cache may be another container's file):
// every entry it returns has a name and a path that lie inside the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/driver/ld_cache.hpp"
#include "fuzz_check.hpp"

using namespace gpufrac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto entries = parse_ld_cache(bytes);
  if (!entries) return 0;
  for (const auto& e : *entries) {
    FUZZ_CHECK(e.name.size() < size && e.path.size() < size);
    FUZZ_CHECK(bytes.find(e.name) != std::string_view::npos && bytes.find(e.path) != std::string_view::npos);
  }
  return 0;
}
