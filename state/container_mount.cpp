#include "state/container_mount.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

constexpr unsigned long kFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC;

// Whether dir is a directory and a mount point (another device than its parent's); false when missing.
Result<bool> is_mount_point(const std::string& dir) {
  struct stat self {
  }, parent{};
  if (::lstat(dir.c_str(), &self) != 0) {
    if (errno == ENOENT) return false;
    return sys_error("cannot stat " + dir);
  }
  if (!S_ISDIR(self.st_mode)) return internal_error(dir + " is not a directory; accepted: a container's directory");
  if (::lstat(fs::dirname(dir).c_str(), &parent) != 0) return sys_error("cannot stat " + fs::dirname(dir));
  return self.st_dev != parent.st_dev;
}

}  // namespace

Result<bool> mount_container_dir(const Config& cfg, const std::string& container_key) {
  const std::string dir = cfg.container_dir(container_key);
  if (auto r = fs::make_dirs(dir, 0755); !r) return std::unexpected(r.error());
  auto mounted = is_mount_point(dir);
  if (!mounted) return std::unexpected(mounted.error());
  if (*mounted) return false;
  const std::string options = text::cat("size=", kContainerDirBytes, ",nr_inodes=", kContainerDirInodes, ",mode=0755");
  if (::mount("gpufrac-container", dir.c_str(), "tmpfs", kFlags, options.c_str()) != 0)
    return sys_error("cannot mount the size-limited tmpfs (" + options + ") of " + dir);
  return true;
}

Result<> grow_container_dir(const Config& cfg, const std::string& container_key, std::uint64_t extra) {
  const std::string dir = cfg.container_dir(container_key);
  auto mounted = is_mount_point(dir);
  if (!mounted) return std::unexpected(mounted.error());
  if (!*mounted) return {};
  struct statfs sf {};
  if (::statfs(dir.c_str(), &sf) != 0) return sys_error("cannot read the size of " + dir);
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t size = static_cast<std::uint64_t>(sf.f_blocks) * static_cast<std::uint64_t>(sf.f_bsize) +
                             (extra + page - 1) / page * page;
  const std::string options = text::cat("size=", size);
  if (::mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | kFlags, options.c_str()) != 0)
    return sys_error("cannot resize the tmpfs of " + dir + " to " + options);
  return {};
}

Result<> unmount_container_dir(const std::string& dir) {
  auto mounted = is_mount_point(dir);
  if (!mounted) return std::unexpected(mounted.error());
  if (*mounted && ::umount2(dir.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0)
    return sys_error("cannot unmount the tmpfs of " + dir);
  return {};
}

}  // namespace gpufrac
