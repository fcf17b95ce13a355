#include "limits/host/region_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>

#include "core/text.hpp"
#include "gf_lock.h"
#include "gf_proc.h"
#include "gf_region.h"

namespace gpufrac::limits {

namespace {

constexpr std::size_t kRegionSize = sizeof(gpufrac_region);
constexpr int kDamaged = EBADMSG;

std::unexpected<Error> damaged(const std::string& path, const std::string& problem) {
  return std::unexpected(Error{text::cat("usage region ", path, ": ", problem, "; accepted: a regular file of ",
                                         kRegionSize, " bytes (gpufrac region version ", GPUFRAC_REGION_VERSION, ")"),
                               kDamaged, ErrorKind::internal});
}

// The file is a regular file of the region's size now.
Result<> check_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("cannot stat usage region " + path);
  if (!S_ISREG(st.st_mode)) return damaged(path, "not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) != kRegionSize) return damaged(path, text::cat(st.st_size, " bytes"));
  return {};
}

// Reads exactly size bytes at offset; damaged when the file ends first (truncated meanwhile).
Result<> pread_exact(int fd, const std::string& path, void* buf, std::size_t size, std::size_t offset) {
  auto* p = static_cast<char*>(buf);
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot read usage region " + path);
    if (n == 0) return damaged(path, "shorter than its size while read (truncated)");
    done += static_cast<std::size_t>(n);
  }
  return {};
}

std::uint32_t load32(const std::uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}

}  // namespace

bool region_damaged(const Error& e) {
  return e.err == kDamaged;
}

Result<int> open_region(const std::string& path, bool writable) {
  const int fd = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return sys_error("cannot open usage region " + path);
  return fd;
}

Result<RegionCopy> read_region_copy(int fd, const std::string& path) {
  if (auto s = check_size(fd, path); !s) return std::unexpected(s.error());
  RegionCopy copy = std::make_unique<gpufrac_region>();
  if (auto r = pread_exact(fd, path, copy.get(), kRegionSize, 0); !r) return std::unexpected(r.error());
  char past = 0;
  const ssize_t more = ::pread(fd, &past, 1, static_cast<off_t>(kRegionSize));
  if (more > 0) return damaged(path, "longer than its size while read (grown)");
  return copy;
}

Result<RegionCopy> read_region_copy(const std::string& path) {
  auto fd = open_region(path, false);
  if (!fd) return std::unexpected(fd.error());
  const int f = *fd;
  auto copy = read_region_copy(f, path);
  ::close(f);
  return copy;
}

Result<> read_region_head(int fd, const std::string& path, gpufrac_region& out) {
  if (auto s = check_size(fd, path); !s) return s;
  if (auto r = pread_exact(fd, path, &out, offsetof(gpufrac_region, slots), 0); !r) return r;
  const unsigned n = gf_region_slots_in_use(&out);
  return pread_exact(fd, path, out.slots, n * sizeof(gpufrac_slot), offsetof(gpufrac_region, slots));
}

Result<bool> check_region_header(const gpufrac_region& r, const std::string& path) {
  const std::uint32_t magic = load32(&r.magic), version = load32(&r.version);
  if (magic == 0) return false;
  if (magic != GPUFRAC_REGION_MAGIC || (version != GPUFRAC_REGION_VERSION && version != 1) ||
      load32(&r.region_size) != kRegionSize || load32(&r.slot_count) != GPUFRAC_MAX_SLOTS) {
    return std::unexpected(Error{text::cat("usage region ", path, ": not a gpufrac region of version ",
                                           GPUFRAC_REGION_VERSION, " or 1 (magic, version or size differ)"),
                                 kDamaged, ErrorKind::internal});
  }
  return true;
}

bool slot_owner_live(std::uint64_t owner, unsigned index, int fd, const std::string& proc_root) {
  switch (gpufrac_owner_state(owner)) {
    case GPUFRAC_SLOT_OWNED:
      return gf_proc_liveness(proc_root.c_str(), gpufrac_owner_pid(owner), gpufrac_owner_start(owner)) != GF_DEAD;
    case GPUFRAC_SLOT_LOCKED:
      return fd < 0 || gf_slot_lock_held(fd, index) != 0;
    default:
      return false;
  }
}

Result<> write_region_field(int fd, const std::string& path, std::size_t offset, const void* value, std::size_t size) {
  if (offset + size > kRegionSize) return internal_error(text::cat("usage region ", path, ": no field at ", offset));
  if (auto s = check_size(fd, path); !s) return s;
  const ssize_t n = ::pwrite(fd, value, size, static_cast<off_t>(offset));
  if (n < 0) return sys_error("cannot write usage region " + path);
  if (static_cast<std::size_t>(n) != size) return damaged(path, "a field could not be written whole");
  return {};
}

}  // namespace gpufrac::limits
