#include "limits/host/arbiter_lease.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::limits {

namespace {

constexpr std::size_t kLeaseSize = sizeof(gpufrac_arbiter);
constexpr std::size_t kHeaderBytes = offsetof(gpufrac_arbiter, pad0);  // magic, version, size, slot_count

Result<fs::UniqueFd> open_lease(const std::string& path, int flags, struct stat& st) {
  fs::UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return sys_error("cannot open compute arbiter " + path);
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat compute arbiter " + path);
  if (!S_ISREG(st.st_mode))
    return internal_error(text::cat("compute arbiter ", path, ": not a regular file; accepted: a regular file of ",
                                    kLeaseSize, " bytes"));
  return fd;
}

std::string octal(unsigned mode) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", mode & 07777u);
  return b;
}

std::vector<std::string> differences(const struct stat& st, FileOwner owner) {
  std::vector<std::string> out;
  if (static_cast<std::uint64_t>(st.st_size) != kLeaseSize)
    out.push_back(text::cat("its lease file is ", st.st_size, " bytes (the host made ", kLeaseSize, ")"));
  if ((st.st_mode & 07777) != kLeaseFileMode)
    out.push_back(
        text::cat("its lease file's mode is ", octal(st.st_mode), " (the host made ", octal(kLeaseFileMode), ")"));
  if (st.st_uid != owner.uid || st.st_gid != owner.gid)
    out.push_back(text::cat("its lease file's owner is ", st.st_uid, ":", st.st_gid, " (the host made ", owner.uid, ":",
                            owner.gid, ")"));
  return out;
}

Result<> pwrite_all(int fd, const void* p, std::size_t n, off_t at, const std::string& path) {
  const auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, b, n, at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return sys_error("cannot write compute arbiter " + path);
    b += w, n -= static_cast<std::size_t>(w), at += w;
  }
  return {};
}

Result<> write_header(int fd, const std::string& path) {
  gpufrac_arbiter h{};
  h.magic = GPUFRAC_ARBITER_MAGIC;
  h.version = GPUFRAC_ARBITER_VERSION;
  h.size = static_cast<std::uint32_t>(kLeaseSize);
  h.slot_count = GPUFRAC_ARBITER_SLOTS;
  return pwrite_all(fd, &h, kHeaderBytes, 0, path);
}

// magic, version, size, slot_count as read from the file.
bool header_ok(const std::uint32_t (&h)[4]) {
  return h[0] == GPUFRAC_ARBITER_MAGIC && h[1] == GPUFRAC_ARBITER_VERSION && h[2] == kLeaseSize &&
         h[3] == GPUFRAC_ARBITER_SLOTS;
}

Result<> read_into(int fd, gpufrac_arbiter& a, const std::string& path) {
  auto* b = reinterpret_cast<char*>(&a);
  std::size_t got = 0;
  while (got < kLeaseSize) {
    const ssize_t r = ::pread(fd, b + got, kLeaseSize - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return sys_error("cannot read compute arbiter " + path);
    if (r == 0) break;  // cut short: the rest stays zero
    got += static_cast<std::size_t>(r);
  }
  return {};
}

}  // namespace

Result<LeaseCopy> read_lease_file(const std::string& path, FileOwner owner) {
  struct stat st {};
  auto fd = open_lease(path, O_RDONLY, st);
  if (!fd) return std::unexpected(fd.error());
  LeaseCopy c;
  c.lease = std::make_unique<gpufrac_arbiter>();
  std::memset(c.lease.get(), 0, kLeaseSize);
  if (auto r = read_into(fd->get(), *c.lease, path); !r) return std::unexpected(r.error());
  c.size = static_cast<std::uint64_t>(st.st_size);
  c.wrong = differences(st, owner);
  return c;
}

Result<LeaseRepair> repair_lease_file(const std::string& path) {
  struct stat st {};
  auto fd = open_lease(path, O_RDWR, st);
  if (!fd) return std::unexpected(fd.error());
  LeaseRepair fixed{0, differences(st, FileOwner{::geteuid(), ::getegid()})};
  if (static_cast<std::uint64_t>(st.st_size) != kLeaseSize) {
    if (::ftruncate(fd->get(), kLeaseSize) != 0) return sys_error("cannot set the size of compute arbiter " + path);
    fixed.what |= GPUFRAC_LEASE_REPAIRED_SIZE;
  }
  if (int e = ::posix_fallocate(fd->get(), 0, kLeaseSize); e != 0)
    return sys_error(text::cat("compute arbiter ", path, ": cannot allocate ", kLeaseSize, " bytes"), e);
  if ((st.st_mode & 07777) != kLeaseFileMode) {
    if (::fchmod(fd->get(), kLeaseFileMode) != 0) return sys_error("cannot chmod compute arbiter " + path);
    fixed.what |= GPUFRAC_LEASE_REPAIRED_MODE;
  }
  if (st.st_uid != ::geteuid() || st.st_gid != ::getegid()) {
    if (::fchown(fd->get(), ::geteuid(), ::getegid()) != 0) return sys_error("cannot chown compute arbiter " + path);
    fixed.what |= GPUFRAC_LEASE_REPAIRED_OWNER;
  }
  std::uint32_t head[4] = {};
  static_assert(sizeof head == kHeaderBytes);
  if (::pread(fd->get(), head, sizeof head, 0) != static_cast<ssize_t>(sizeof head) || !header_ok(head)) {
    if (auto r = write_header(fd->get(), path); !r) return std::unexpected(r.error());
    fixed.what |= GPUFRAC_LEASE_REPAIRED_HEADER;
    fixed.phrases.push_back("its lease file's header was overwritten");
  }
  return fixed;
}

Result<> write_new_lease_file(const std::string& path, const std::string& final) {
  fs::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kLeaseFileMode));
  if (!fd) return sys_error("cannot create " + path);
  if (int e = ::posix_fallocate(fd.get(), 0, kLeaseSize); e != 0)
    return sys_error(text::cat("compute arbiter ", final, ": cannot allocate ", kLeaseSize, " bytes"), e);
  if (::fchmod(fd.get(), kLeaseFileMode) != 0) return sys_error("cannot chmod " + path);
  return write_header(fd.get(), path);
}

}  // namespace gpufrac::limits
