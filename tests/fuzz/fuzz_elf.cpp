// Fuzzes the ELF reader (driver libraries are read for their SONAME; the host's ldconfig is checked
// to be static): a SONAME it returns is a string inside the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/driver/elf_info.hpp"
#include "fuzz_check.hpp"

using namespace gpufrac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto elf = parse_elf(bytes);
  if (!elf) return 0;
  FUZZ_CHECK(size >= 52);  // an ELF header at least
  if (elf->soname) FUZZ_CHECK(bytes.find(*elf->soname) != std::string_view::npos);
  return 0;
}
