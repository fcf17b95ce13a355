#include "cli/node/interp.hpp"

#include <elf.h>

#include <cstring>

#include "core/text.hpp"

namespace gpufrac::cli::node {

namespace {

// The file range of the PT_INTERP segment: [offset, offset + size).
struct Range {
  std::uint64_t offset = 0, size = 0;
};

Result<Range> interp_range(std::string_view b) {
  if (b.size() < sizeof(Elf64_Ehdr) || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0)
    return user_error("not an ELF file");
  if (b[EI_CLASS] != ELFCLASS64 || b[EI_DATA] != ELFDATA2LSB) return user_error("not a 64-bit little-endian ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  if (eh.e_phnum && eh.e_phentsize != sizeof(Elf64_Phdr)) return user_error("bad program header size");
  for (std::uint64_t i = 0; i < eh.e_phnum; ++i) {
    const std::uint64_t off = eh.e_phoff + i * sizeof(Elf64_Phdr);
    if (eh.e_phoff > b.size() || off > b.size() || b.size() - off < sizeof(Elf64_Phdr))
      return user_error("truncated program headers");
    Elf64_Phdr ph;
    std::memcpy(&ph, b.data() + off, sizeof ph);
    if (ph.p_type != PT_INTERP) continue;
    if (ph.p_offset > b.size() || ph.p_filesz > b.size() - ph.p_offset || ph.p_filesz < 2)
      return user_error("PT_INTERP outside the file");
    return Range{ph.p_offset, ph.p_filesz};
  }
  return user_error("no program interpreter (a static program)");
}

}  // namespace

Result<std::string> program_interpreter(std::string_view elf) {
  auto r = interp_range(elf);
  if (!r) return std::unexpected(r.error());
  const std::string_view s = elf.substr(r->offset, r->size);
  return std::string(s.substr(0, s.find('\0')));
}

Result<> set_program_interpreter(std::string& elf, std::string_view path) {
  auto r = interp_range(elf);
  if (!r) return std::unexpected(r.error());
  if (path.empty() || path.front() != '/' || path.find('\0') != std::string_view::npos)
    return user_error("program interpreter " + text::quote(path, 300) + ": must be an absolute path");
  if (path.size() + 1 > r->size)
    return user_error(text::cat("program interpreter ", text::quote(path, 300), ": ", path.size(),
                                " bytes, the program has room for ", r->size - 1, "; use a shorter --install-dir"));
  std::memset(elf.data() + r->offset, 0, r->size);
  std::memcpy(elf.data() + r->offset, path.data(), path.size());
  return {};
}

}  // namespace gpufrac::cli::node
