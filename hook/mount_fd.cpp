#include "hook/mount_fd.hpp"

#include <fcntl.h>
#include <sys/mount.h>

#include "core/text.hpp"

namespace gpufrac::hook {

Result<fs::UniqueFd> clone_bind_source(const std::string& host_path) {
  fs::UniqueFd fd(::open_tree(AT_FDCWD, host_path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW));
  if (!fd) return sys_error("cannot open mount source " + host_path);
  return fd;
}

Result<fs::UniqueFd> make_tmpfs(std::string_view size, unsigned mode) {
  fs::UniqueFd fsfd(::fsopen("tmpfs", FSOPEN_CLOEXEC));
  if (!fsfd) return sys_error("cannot create a tmpfs (fsopen)");
  const std::string size_s(size), mode_s = text::cat(mode >> 6 & 7, mode >> 3 & 7, mode & 7);
  if (::fsconfig(fsfd.get(), FSCONFIG_SET_STRING, "size", size_s.c_str(), 0) != 0 ||
      ::fsconfig(fsfd.get(), FSCONFIG_SET_STRING, "mode", mode_s.c_str(), 0) != 0 ||
      ::fsconfig(fsfd.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    return sys_error("cannot configure a tmpfs");
  fs::UniqueFd mnt(::fsmount(fsfd.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
  if (!mnt) return sys_error("cannot create a tmpfs mount (fsmount)");
  return mnt;
}

Result<> set_mount_attrs(int mount_fd, const MountAttrs& a, std::string_view what) {
  struct mount_attr attr {};
  attr.attr_set = (a.read_only ? MOUNT_ATTR_RDONLY : 0) | (a.nosuid ? MOUNT_ATTR_NOSUID : 0) |
                  (a.nodev ? MOUNT_ATTR_NODEV : 0) | (a.noexec ? MOUNT_ATTR_NOEXEC : 0);
  if (::mount_setattr(mount_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0)
    return sys_error("cannot set mount attributes of " + std::string(what));
  return {};
}

Result<> attach_mount(int mount_fd, int target_fd, std::string_view what) {
  if (::move_mount(mount_fd, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
    return sys_error("cannot mount " + std::string(what));
  return {};
}

}  // namespace gpufrac::hook
