// The program interpreter (PT_INTERP) of the CLI that `gpufrac node setup` installs. The CLI is
// linked with a long interpreter path (the system loader's, padded with slashes: the same file, so
// the package's /usr/bin/gpufrac runs as it is); setup writes into that room the absolute host path
// of the loader it installs beside the CLI, so that the installed CLI runs with the glibc it was
// built against whatever the host's is (docs/architecture.md "Node setup"). A bounded parser of
// 64-bit little-endian ELF (x86-64, aarch64): every offset is checked against the buffer.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac::cli::node {

// The interpreter path the program names (up to its first NUL).
Result<std::string> program_interpreter(std::string_view elf);

// Writes `path` over the program's interpreter, NUL-padded to the room the link left (the segment's
// size). An error when the program has no interpreter or `path` does not fit.
Result<> set_program_interpreter(std::string& elf, std::string_view path);

}  // namespace gpufrac::cli::node
