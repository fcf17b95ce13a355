#include "core/shared_map.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "core/fs.hpp"

namespace gpufrac::fs {

SharedMapping::~SharedMapping() {
  if (p_ != nullptr) ::munmap(p_, size_);
}

Result<bool> fully_allocated(int fd, std::uint64_t size, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("cannot stat " + path);
  return static_cast<std::uint64_t>(st.st_blocks) * 512 >= size;
}

Result<> fill_holes(int fd, std::uint64_t size, const std::string& path) {
  int rc = 0;
  while ((rc = ::fallocate(fd, 0, 0, static_cast<off_t>(size))) != 0 && errno == EINTR) {
  }
  if (rc != 0) return sys_error("cannot allocate the hole in " + path + " before mapping it");
  return {};
}

namespace {

// A read-write descriptor of the file open as fd: the same inode, opened again by its path.
Result<UniqueFd> reopen_writable(int fd, const std::string& path) {
  UniqueFd rw(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!rw) return sys_error("cannot allocate the hole in " + path + " before mapping it: cannot open it read-write");
  struct stat a {
  }, b{};
  if (::fstat(fd, &a) != 0 || ::fstat(rw.get(), &b) != 0) return sys_error("cannot stat " + path);
  if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
    return internal_error(path + " was replaced while it was being opened; try again");
  return rw;
}

Result<> fill_before_mapping(int fd, std::size_t size, bool writable, const std::string& path) {
  auto full = fully_allocated(fd, size, path);
  if (!full) return std::unexpected(full.error());
  if (*full) return {};
  if (writable) return fill_holes(fd, size, path);
  auto rw = reopen_writable(fd, path);
  if (!rw) return std::unexpected(rw.error());
  return fill_holes(rw->get(), size, path);
}

}  // namespace

Result<SharedMapping> map_allocated(int fd, std::size_t size, bool writable, const std::string& path) {
  if (auto r = fill_before_mapping(fd, size, writable, path); !r) return std::unexpected(r.error());
  void* p = ::mmap(nullptr, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return sys_error("cannot map " + path);
  return SharedMapping(p, size);
}

}  // namespace gpufrac::fs
