// The dynamic loader's cache, /etc/ld.so.cache, as glibc's ldconfig writes it (the "new" format,
// glibc-ld.so.cache1.1, alone or after the old ld.so-1.7.0 table). gpufrac reads the host's cache
// to find the driver's libraries where the usual directories do not have them; the bytes are
// untrusted (a driver root may be another container's file system), so every offset is checked.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace gpufrac {

struct LdCacheEntry {
  std::string name;        // the SONAME (or linker name) the loader looks up, e.g. "libcuda.so.1"
  std::string path;        // where the loader finds it, e.g. "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  std::int32_t flags = 0;  // FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 (0x0303) for x86-64 glibc libraries
  bool operator==(const LdCacheEntry&) const = default;
};

// The flags of a library of this machine's ABI (x86-64: 0x0303, AArch64: 0x0a03).
std::int32_t native_ld_cache_flags();

Result<std::vector<LdCacheEntry>> parse_ld_cache(std::string_view bytes);

}  // namespace gpufrac
