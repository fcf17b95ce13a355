// Files that several processes map MAP_SHARED and change in place: the containers' usage regions
// (limits_abi.h) and the metrics counters. A page of such a file that has no storage (a hole) gets
// it when it is first touched through a mapping, and on a full filesystem (a tmpfs state
// directory) that touch is SIGBUS, which kills whoever made it. So these files are created with
// every page allocated (fs::write_file_atomic_allocated), and none is mapped while it has a hole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace gpufrac::fs {

// A MAP_SHARED mapping, unmapped when this goes.
class SharedMapping {
 public:
  SharedMapping(void* p, std::size_t size) : p_(p), size_(size) {}
  SharedMapping(SharedMapping&& o) noexcept : p_(std::exchange(o.p_, nullptr)), size_(o.size_) {}
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  SharedMapping& operator=(SharedMapping&&) = delete;
  ~SharedMapping();
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_;
  std::size_t size_;
};

// Whether every byte of the open file's first `size` bytes has storage: st_blocks covers them.
// (tmpfs counts fallocated pages in st_blocks, while SEEK_HOLE reports them as a hole until written.)
Result<bool> fully_allocated(int fd, std::uint64_t size, const std::string& path);

// Gives the holes in the open file's first `size` bytes their storage: fallocate mode 0 writes no
// byte, so it is safe while others map and change the file (posix_fallocate's fallback would write
// zeros over live data). Allocated pages are left as they are, so it needs no room for them.
Result<> fill_holes(int fd, std::uint64_t size, const std::string& path);

// Maps the open file's first `size` bytes MAP_SHARED, read-write or read-only, once it has no hole:
// a hole is filled first, through fd when it is writable, else through the same file opened again
// read-write. When that fails (the filesystem is full) nothing is mapped; the error, "cannot
// allocate the hole in <path> before mapping it: <strerror>", keeps the errno.
Result<SharedMapping> map_allocated(int fd, std::size_t size, bool writable, const std::string& path);

}  // namespace gpufrac::fs
