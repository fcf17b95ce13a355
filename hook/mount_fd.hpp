// Mounting by file descriptor with the kernel's mount API (open_tree, fsopen/fsmount, move_mount,
// mount_setattr): sources are opened as detached mounts in the host namespace, then attached to
// target fds obtained by the rootfs walk inside the container's namespace. No path string is
// resolved at mount time, so nothing can be redirected between lookup and mount.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/fs.hpp"

namespace gpufrac::hook {

// Mount attributes (MOUNT_ATTR_*) for read-only binds of files and device nodes.
struct MountAttrs {
  bool read_only = false;
  bool nosuid = true;
  bool nodev = false;  // never for device nodes
  bool noexec = false;
};

// A detached bind mount of a host file, directory or device node.
Result<fs::UniqueFd> clone_bind_source(const std::string& host_path);
// A detached, fresh tmpfs (nosuid, nodev, noexec) with the given size ("1m") and root mode.
Result<fs::UniqueFd> make_tmpfs(std::string_view size, unsigned mode);
Result<> set_mount_attrs(int mount_fd, const MountAttrs& attrs, std::string_view what);
// Attaches a detached mount onto the target fd (in the caller's current mount namespace).
Result<> attach_mount(int mount_fd, int target_fd, std::string_view what);

}  // namespace gpufrac::hook
