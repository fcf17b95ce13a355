// A small tmpfs for the tests of a full state directory. It is mounted in a mount namespace of the
// test process alone (unshare; / made private first), so the host never sees it and it goes away
// with the process. Needs root: without it, or without mount namespaces, the test is skipped.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "scratch_dir.hpp"

namespace gpufrac::testing {

class SmallTmpfs {
 public:
  // Mounts a tmpfs of `bytes` at a fresh scratch directory; "" when it cannot (see skip_reason()).
  std::string mount(std::uint64_t bytes) {
    if (::geteuid() != 0) return fail("needs root");
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return fail("no mount namespace");
    dir_ = test::scratch_dir("gpufrac-tmpfs");
    const std::string options = text::cat("size=", bytes, ",mode=0755");
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) != 0) return fail("cannot mount a tmpfs");
    return dir_;
  }
  const std::string& skip_reason() const { return why_; }
  ~SmallTmpfs() {
    if (!dir_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  }

  std::uint64_t free_bytes() const {
    struct statvfs v {};
    return ::statvfs(dir_.c_str(), &v) == 0 ? static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize : 0;
  }
  // Makes <dir>/fill take all the room but `leave` bytes (a multiple of the page size).
  void fill(std::uint64_t leave) {
    const std::string path = dir_ + "/fill";
    ::unlink(path.c_str());
    const std::uint64_t room = free_bytes();
    ASSERT_GE(room, leave);
    fs::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd);
    if (room > leave) {
      ASSERT_EQ(::posix_fallocate(fd.get(), 0, static_cast<off_t>(room - leave)), 0);
    }
    ASSERT_EQ(free_bytes(), leave);
  }
  void unfill() { ::unlink((dir_ + "/fill").c_str()); }

 private:
  std::string fail(const char* why) {
    why_ = why;
    return "";
  }
  std::string dir_, why_;
};

}  // namespace gpufrac::testing
