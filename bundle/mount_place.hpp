// Which mount a file descriptor is on, and whether it is that mount's root (statx STATX_MNT_ID and
// STATX_ATTR_MOUNT_ROOT, Linux 5.8): how the hook tells a directory of the container root, or of a
// mount the runtime made at its top level, from a mount that reached the rootfs some other way (a
// host mount propagated into the container's namespace, brought in by exchanging a directory).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac::bundle {

struct MountPlace {
  std::uint64_t mount_id = 0;
  bool mount_root = false;  // the fd is the root of its mount (a mount point as seen from above)
  dev_t dev = 0;
  ino_t ino = 0;
};

// statx(fd, "", AT_EMPTY_PATH). A kernel without STATX_MNT_ID (before 5.8) is refused with one line:
// the hook cannot tell where it would create a file.
Result<MountPlace> mount_place(int fd, std::string_view what);

}  // namespace gpufrac::bundle
