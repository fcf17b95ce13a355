#include "core/driver/elf_info.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstring>
#include <vector>

#include "core/fs.hpp"

namespace gpufrac {

namespace {

// A loadable segment: file offset and size of the bytes that back [vaddr, vaddr + filesz).
struct Segment {
  std::uint64_t type = 0, offset = 0, vaddr = 0, filesz = 0;
};

// Reads a T at `off`, or nothing when it would run past the end.
template <class T>
std::optional<T> at(std::string_view b, std::uint64_t off) {
  if (off > b.size() || b.size() - off < sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

Result<std::vector<Segment>> segments(std::string_view b, bool is64) {
  std::uint64_t phoff = 0, phnum = 0, phentsize = 0;
  if (is64) {
    auto eh = at<Elf64_Ehdr>(b, 0);
    if (!eh) return user_error("truncated ELF header");
    phoff = eh->e_phoff, phnum = eh->e_phnum, phentsize = eh->e_phentsize;
    if (phnum && phentsize != sizeof(Elf64_Phdr)) return user_error("bad program header size");
  } else {
    auto eh = at<Elf32_Ehdr>(b, 0);
    if (!eh) return user_error("truncated ELF header");
    phoff = eh->e_phoff, phnum = eh->e_phnum, phentsize = eh->e_phentsize;
    if (phnum && phentsize != sizeof(Elf32_Phdr)) return user_error("bad program header size");
  }
  std::vector<Segment> out;
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const std::uint64_t off = phoff + i * phentsize;
    if (is64) {
      auto p = at<Elf64_Phdr>(b, off);
      if (!p) return user_error("truncated program headers");
      out.push_back({p->p_type, p->p_offset, p->p_vaddr, p->p_filesz});
    } else {
      auto p = at<Elf32_Phdr>(b, off);
      if (!p) return user_error("truncated program headers");
      out.push_back({p->p_type, p->p_offset, p->p_vaddr, p->p_filesz});
    }
  }
  return out;
}

// The file offset of a virtual address, through the PT_LOAD segment that maps it.
std::optional<std::uint64_t> file_offset(const std::vector<Segment>& segs, std::uint64_t vaddr) {
  for (const Segment& s : segs)
    if (s.type == PT_LOAD && vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) return s.offset + (vaddr - s.vaddr);
  return std::nullopt;
}

// DT_SONAME through DT_STRTAB, both read from the PT_DYNAMIC segment.
Result<std::optional<std::string>> soname(std::string_view b, bool is64, const std::vector<Segment>& segs,
                                          const Segment& dyn) {
  std::optional<std::uint64_t> strtab, name;
  const std::uint64_t entsize = is64 ? sizeof(Elf64_Dyn) : sizeof(Elf32_Dyn);
  for (std::uint64_t off = dyn.offset; off - dyn.offset + entsize <= dyn.filesz; off += entsize) {
    std::int64_t tag = 0;
    std::uint64_t val = 0;
    if (is64) {
      auto d = at<Elf64_Dyn>(b, off);
      if (!d) return user_error("truncated dynamic section");
      tag = d->d_tag, val = d->d_un.d_val;
    } else {
      auto d = at<Elf32_Dyn>(b, off);
      if (!d) return user_error("truncated dynamic section");
      tag = d->d_tag, val = d->d_un.d_val;
    }
    if (tag == DT_NULL) break;
    if (tag == DT_STRTAB) strtab = val;
    if (tag == DT_SONAME) name = val;
  }
  if (!name) return std::optional<std::string>{};
  if (!strtab) return user_error("DT_SONAME without DT_STRTAB");
  auto base = file_offset(segs, *strtab);
  if (!base || *name > b.size() || *base > b.size() - *name) return user_error("DT_SONAME outside the file");
  const std::string_view rest = b.substr(*base + *name);
  const std::size_t end = rest.find('\0');
  if (end == std::string_view::npos || end == 0 || end > 255) return user_error("DT_SONAME is not a short string");
  return std::optional<std::string>(std::string(rest.substr(0, end)));
}

}  // namespace

Result<ElfInfo> parse_elf(std::string_view b) {
  if (b.size() < EI_NIDENT || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0) return user_error("not an ELF file");
  if (b[EI_DATA] != ELFDATA2LSB) return user_error("not a little-endian ELF file");
  if (b[EI_CLASS] != ELFCLASS64 && b[EI_CLASS] != ELFCLASS32) return user_error("unknown ELF class");
  ElfInfo info;
  info.is_64bit = b[EI_CLASS] == ELFCLASS64;
  auto type = at<std::uint16_t>(b, 16), machine = at<std::uint16_t>(b, 18);
  if (!type || !machine) return user_error("truncated ELF header");
  info.type = *type, info.machine = *machine;
  auto segs = segments(b, info.is_64bit);
  if (!segs) return std::unexpected(segs.error());
  for (const Segment& s : *segs) {
    if (s.type == PT_INTERP) info.has_interp = true;
    if (s.type != PT_DYNAMIC || info.has_dynamic) continue;
    info.has_dynamic = true;
    auto name = soname(b, info.is_64bit, *segs, s);
    if (!name) return std::unexpected(name.error());
    info.soname = std::move(*name);
  }
  return info;
}

Result<ElfInfo> read_elf(const std::string& path, std::size_t max_bytes) {
  fs::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return sys_error("cannot open " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat " + path);
  if (!S_ISREG(st.st_mode)) return user_error(path + ": not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return user_error(path + ": larger than an ELF file gpufrac reads");
  if (st.st_size == 0) return user_error(path + ": not an ELF file (empty)");
  // Mapped, not read: a driver library is tens of MiB and only its headers are looked at.
  void* map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (map == MAP_FAILED) return sys_error("cannot map " + path);
  auto info = parse_elf(std::string_view(static_cast<const char*>(map), static_cast<std::size_t>(st.st_size)));
  ::munmap(map, static_cast<std::size_t>(st.st_size));
  if (!info) return std::unexpected(info.error().wrap(path));
  return info;
}

}  // namespace gpufrac
