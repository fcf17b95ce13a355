// Mount targets inside the tmpfs gpufrac makes at /run/gpufrac (mount_fd.hpp make_tmpfs: fsopen,
// fsconfig, fsmount). They are created through the tmpfs's own fd while it is still detached, and
// opened through that fd after it is attached (the fd still refers to the mount), so no path of the
// container root is ever walked to a file gpufrac creates there: a directory of the rootfs exchanged
// for a host directory while the hook runs cannot turn these files into host files.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bundle/rootfs_path.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"

namespace gpufrac::hook {

// `path` relative to the directory `base` ("limits" for /run/gpufrac/limits beneath /run/gpufrac),
// or nullopt when it is not strictly beneath it. Both are absolute container paths.
std::optional<std::string> path_beneath(std::string_view base, std::string_view path);

// Creates the mount point `rel` in the tmpfs (missing directories 0755; the target itself with
// O_CREAT|O_EXCL|O_NOFOLLOW: an empty file 0644, or a directory): the tmpfs is fresh and detached, so
// a name already there is a bug. `container_path` names it in errors.
Result<> make_tmpfs_target(int tmpfs_fd, std::string_view rel, bundle::TargetKind kind,
                           std::string_view container_path);

// Opens that mount point again, beneath the tmpfs's fd and on its mount: openat2 with
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV.
Result<fs::UniqueFd> open_tmpfs_target(int tmpfs_fd, std::string_view rel, bundle::TargetKind kind,
                                       std::string_view container_path);

// Whether `dir_fd` is the tmpfs a CDI spec of gpufrac mounted (the runtime made it from the spec):
// the root of a mount whose entry `shim_rel` is itself a mount showing the shim (`shim_fd`, a mount
// of the host's shim: same device and inode). The CDI device's hook mounts gpufrac's own tmpfs over
// it; any other mount at /run/gpufrac is refused by the mount rule (rootfs_path.hpp).
bool is_spec_tmpfs(int dir_fd, std::string_view shim_rel, int shim_fd);

// Whether `dir_fd` is the root of a tmpfs mount (the /dev/shm a runtime mounts, which an SM share's
// MPS shm directory goes over: core/plan/plan_mps.hpp).
bool is_tmpfs(int dir_fd);

}  // namespace gpufrac::hook
