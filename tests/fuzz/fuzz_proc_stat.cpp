// Fuzzes the /proc/<pid>/stat parser (a process chooses its own comm, spaces and parentheses included).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/process.hpp"
#include "fuzz_check.hpp"

using namespace gpufrac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto stat = parse_proc_stat(text);
  if (stat) FUZZ_CHECK(text.rfind(')') != std::string_view::npos);
  return 0;
}
