// Applies the mounts and device nodes of an Edits value inside a container's mount namespace.
// Sources are prepared as detached mounts in the host namespace, gpufrac's tmpfs with the mount
// points of what nests in it already made through its fd (tmpfs_targets.hpp); a forked child then
// joins the container's namespace, narrows its capabilities, installs the seccomp allow-list and
// attaches each source: to a target reached by the rootfs walk under the mount rule
// (rootfs_path.hpp), or, for a mount nested in gpufrac's tmpfs, to a target opened through the
// tmpfs's own fd, never by a walk from the root.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bundle/rootfs_path.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/plan/edits.hpp"

namespace gpufrac::hook {

struct NamespaceTarget {
  std::string mnt_ns_path;  // e.g. /proc/<pid>/ns/mnt
  std::string rootfs;       // the container root as seen inside that namespace (config root.path)
};

// One mount ready to attach: a detached mount fd and where it goes.
struct PreparedMount {
  fs::UniqueFd source;
  std::string container_path;
  bundle::TargetKind kind = bundle::TargetKind::file;
  bool own_tmpfs = false;            // a tmpfs gpufrac made (fsmount)
  std::optional<std::size_t> tmpfs;  // nested in that tmpfs (its index): reached through its fd
  std::string rel;                   // then: the path beneath the tmpfs
};

// Opens every source of `edits` (mounts, then device nodes) in the current (host) namespace, in the
// order they must be attached (parents before children), and makes the mount points of the ones
// nested in gpufrac's tmpfs inside it. A target inside a directory bind is refused: its mount point
// would be made in the host's directory.
Result<std::vector<PreparedMount>> prepare_mounts(const Edits& edits);
// Each container path under root_fd (walked as the attach walks it) shows its mount's source, the
// same device and inode: the last step of the attach, so that a directory exchanged into the rootfs
// during the hook cannot leave a container without its files.
Result<> verify_mounts(int root_fd, const std::vector<PreparedMount>& mounts);
// Attaches them inside the target namespace (forked child). Errors are the child's one line.
Result<> attach_in_namespace(const NamespaceTarget& target, const std::vector<PreparedMount>& mounts);

}  // namespace gpufrac::hook
