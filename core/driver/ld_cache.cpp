#include "core/driver/ld_cache.hpp"

#include <cstring>
#include <optional>

namespace gpufrac {

namespace {

constexpr std::string_view kOldMagic = "ld.so-1.7.0";
constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";
constexpr std::size_t kNewHeader = 48;  // magic + version (20), nlibs, len_strings, flags, pad, ext, unused[3]
constexpr std::size_t kNewEntry = 24;   // flags, key, value, osversion, hwcap
constexpr std::size_t kOldEntry = 12;   // flags, key, value
constexpr std::uint32_t kMaxEntries = 1u << 20;

std::optional<std::uint32_t> u32(std::string_view b, std::size_t off) {
  if (off > b.size() || b.size() - off < 4) return std::nullopt;
  std::uint32_t v;
  std::memcpy(&v, b.data() + off, 4);
  return v;
}

// A NUL-terminated string at `off` (offsets of the new format count from the start of its header).
Result<std::string> string_at(std::string_view b, std::uint32_t off) {
  if (off >= b.size()) return user_error("a string offset points outside the cache");
  const std::size_t end = b.find('\0', off);
  if (end == std::string_view::npos) return user_error("an unterminated string in the cache");
  if (end - off > 4096) return user_error("a string longer than a path in the cache");
  return std::string(b.substr(off, end - off));
}

// Where the new-format table starts: at 0, or after the old table (aligned to 8 bytes).
Result<std::size_t> new_table_offset(std::string_view b) {
  if (b.starts_with(kNewMagic)) return 0;
  if (!b.starts_with(kOldMagic)) return user_error("not a glibc ld.so.cache (unknown magic)");
  auto nlibs = u32(b, kOldMagic.size() + 1);  // the old magic is followed by a NUL in the struct
  if (!nlibs || *nlibs > kMaxEntries) return user_error("truncated ld.so.cache header");
  std::size_t off = 16 + std::size_t{*nlibs} * kOldEntry;
  off = (off + 7) & ~std::size_t{7};
  if (off > b.size() || !b.substr(off).starts_with(kNewMagic))
    return user_error("an old-format-only ld.so.cache (glibc before 2.32 writes both; no new table found)");
  return off;
}

}  // namespace

std::int32_t native_ld_cache_flags() {
#if defined(__x86_64__)
  return 0x0303;
#elif defined(__aarch64__)
  return 0x0a03;
#else
  return 0x0003;
#endif
}

Result<std::vector<LdCacheEntry>> parse_ld_cache(std::string_view bytes) {
  auto start = new_table_offset(bytes);
  if (!start) return std::unexpected(start.error());
  const std::string_view b = bytes.substr(*start);
  if (b.size() < kNewHeader) return user_error("truncated ld.so.cache header");
  const std::uint32_t nlibs = *u32(b, 20);
  if (nlibs > kMaxEntries || b.size() - kNewHeader < std::size_t{nlibs} * kNewEntry)
    return user_error("ld.so.cache lists more entries than it holds");
  std::vector<LdCacheEntry> out;
  out.reserve(nlibs);
  for (std::uint32_t i = 0; i < nlibs; ++i) {
    const std::size_t e = kNewHeader + std::size_t{i} * kNewEntry;
    std::int32_t flags;
    std::memcpy(&flags, b.data() + e, 4);
    auto name = string_at(b, *u32(b, e + 4));
    if (!name) return std::unexpected(name.error());
    auto path = string_at(b, *u32(b, e + 8));
    if (!path) return std::unexpected(path.error());
    out.push_back({std::move(*name), std::move(*path), flags});
  }
  return out;
}

}  // namespace gpufrac
