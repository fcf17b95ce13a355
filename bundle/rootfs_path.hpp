// Resolving paths inside a container rootfs without ever leaving it. The hook runs as root on a
// rootfs the container image controls, so every mount target is reached by a component-by-component
// walk from a directory fd of the root: each step opens one name with O_NOFOLLOW, symlinks are
// refused (not followed), ".." is refused, and missing components are created with mkdirat/openat on
// the parent fd. A target that already exists is first resolved by the kernel in one call,
// openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), the same rules; the walk
// runs when that fails (a missing component, a symlink, a wrong kind, another mount) and creates
// what is missing or words the error. A target that is a symlink fails with one line naming the path.
//
// The mount rule (ensure_target_in_root): the top-level directory of a path may be on any mount (the
// container root's, or one the runtime made there: /dev, a tmpfs on /run); every directory below it,
// and a directory target, must be on that same mount (statx STATX_MNT_ID; RESOLVE_NO_XDEV in the
// one call). So nothing is created in, and no directory is mounted over, a mount that reached the
// rootfs below its top level: a host directory propagated into the container's namespace and brought
// onto the path by exchanging a directory of the rootfs while the hook runs. A file target may be a
// mount of its own (a bind the runtime made, such as a spec's /etc/ld.so.preload).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/fs.hpp"

namespace gpufrac::bundle {

enum class TargetKind { directory, file };

// Splits an absolute container path into components; refuses relative paths, "..", ".", NUL,
// overlong paths and components.
Result<std::vector<std::string>> split_container_path(std::string_view path);

// Opens an existing path beneath root_fd as O_PATH (no symlink anywhere, no escape). It crosses
// mounts: it only reads and verifies, never creates.
Result<fs::UniqueFd> open_in_root(int root_fd, std::string_view path);

// Reads a regular file beneath root_fd (bounded; a FIFO, device or symlink is refused, so a hostile
// image cannot block or redirect the read). A missing file reads as "".
Result<std::string> read_regular_in_root(int root_fd, std::string_view path, std::size_t max_bytes);

// The image's own /etc/ld.so.preload (at most 64 KiB), read beneath `rootfs` as above; "" when the
// rootfs cannot be opened or the file is missing. An error (a symlink, a FIFO, too long) is the
// caller's to report: the image's lines are then left out.
Result<std::string> read_image_preload(const std::string& rootfs);

// Takes an O_PATH fd of a directory target that is the root of another mount than its top-level
// directory's, and says whether it may be mounted over anyway (ns_apply: the tmpfs a CDI spec of
// gpufrac mounted there).
using MountRootCheck = std::function<bool(int fd)>;

// Makes sure `path` exists as a mount target of the given kind, keeping to the mount rule above,
// creating missing directories (0755) and, for files, an empty regular file (0644). An existing
// target must be a directory for TargetKind::directory; for TargetKind::file anything but a
// directory or symlink is accepted (device nodes a runtime created are fine). Returns an O_PATH fd of
// the target.
Result<fs::UniqueFd> ensure_target_in_root(int root_fd, std::string_view path, TargetKind kind,
                                           const MountRootCheck& accept = {});

}  // namespace gpufrac::bundle
