// What gpufrac reads from an ELF file it did not build: a driver library's SONAME (for the links a
// container needs) and whether a program is static (the host's ldconfig must need no loader, since
// it runs inside the container root). A bounded, read-only parser of untrusted bytes: every offset
// is checked against the buffer, so a truncated or hostile file is an error, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac {

struct ElfInfo {
  bool is_64bit = false;
  std::uint16_t machine = 0;          // e_machine (62 = x86-64, 183 = AArch64)
  std::uint16_t type = 0;             // e_type (2 = EXEC, 3 = DYN)
  bool has_interp = false;            // PT_INTERP: needs a dynamic loader
  bool has_dynamic = false;           // PT_DYNAMIC
  std::optional<std::string> soname;  // DT_SONAME
  // Static (fully or static-pie): no loader is involved in running it.
  bool is_static() const { return !has_interp; }
};

// Parses the ELF header, the program headers and the dynamic section of `bytes`.
Result<ElfInfo> parse_elf(std::string_view bytes);
// Reads at most max_bytes of a file and parses it (the error names the path).
Result<ElfInfo> read_elf(const std::string& path, std::size_t max_bytes = 256u << 20);

}  // namespace gpufrac
