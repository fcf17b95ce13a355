#include "state/compute_mount.hpp"

#include <linux/capability.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/text.hpp"

#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256  // Linux 5.10: symlinks on the mount are not followed
#endif

namespace gpufrac {

namespace {

constexpr unsigned long kFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOSYMFOLLOW;
constexpr int kMaxStacked = 16;  // mounts detached from one path at most

// Whether dir is the root of a tmpfs (a mount of its own: another device than its parent's).
bool is_tmpfs_mount(const std::string& dir) {
  struct statfs fs {};
  struct stat self {
  }, parent{};
  if (::statfs(dir.c_str(), &fs) != 0 || fs.f_type != TMPFS_MAGIC) return false;
  if (::lstat(dir.c_str(), &self) != 0 || !S_ISDIR(self.st_mode)) return false;
  if (::stat((dir + "/..").c_str(), &parent) != 0) return false;
  return self.st_dev != parent.st_dev;
}

// Raises CAP_SYS_ADMIN in the effective set for its lifetime when it is permitted but not effective
// (gpufrac-hook books with a narrowed effective set: hook/privileges.hpp), and lowers it again.
class SysAdminRaised {
 public:
  SysAdminRaised() {
    if (::syscall(SYS_capget, &head_, data_) != 0) return;
    const __u32 bit = 1u << CAP_SYS_ADMIN;
    if ((data_[0].permitted & bit) == 0 || (data_[0].effective & bit) != 0) return;
    data_[0].effective |= bit;
    raised_ = ::syscall(SYS_capset, &head_, data_) == 0;
  }
  ~SysAdminRaised() {
    if (!raised_) return;
    data_[0].effective &= ~(1u << CAP_SYS_ADMIN);
    ::syscall(SYS_capset, &head_, data_);
  }
  SysAdminRaised(const SysAdminRaised&) = delete;
  SysAdminRaised& operator=(const SysAdminRaised&) = delete;

 private:
  __user_cap_header_struct head_{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data_[_LINUX_CAPABILITY_U32S_3]{};
  bool raised_ = false;
};

}  // namespace

Result<> mount_compute_dir(const std::string& dir) {
  if (is_tmpfs_mount(dir)) return {};
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return internal_error("cannot remove " + dir + ": " + ec.message());
  if (::mkdir(dir.c_str(), 0755) != 0) return sys_error("cannot make " + dir);
  SysAdminRaised admin;  // the mount only
  const std::string options =
      text::cat("size=", kComputeDirBytes >> 10, "k,nr_inodes=", kComputeDirInodes, ",mode=0755");
  if (::mount("gpufrac-compute", dir.c_str(), "tmpfs", kFlags, options.c_str()) != 0) {
    auto err = sys_error(text::cat("cannot mount a tmpfs (", options, ") on ", dir));
    ::rmdir(dir.c_str());
    return err;
  }
  return {};
}

Result<> unmount_compute_dir(const std::string& dir) {
  for (int i = 0;; ++i) {
    if (i == kMaxStacked)
      return internal_error(text::cat(dir, ": more than ", kMaxStacked, " mounts stacked; unmount them by hand"));
    if (::umount2(dir.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) continue;
    if (errno == EINVAL || errno == ENOENT) break;
    return sys_error("cannot unmount " + dir);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return internal_error("cannot remove " + dir + ": " + ec.message());
  return {};
}

}  // namespace gpufrac
