#include "bundle/mount_place.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>

namespace gpufrac::bundle {

Result<MountPlace> mount_place(int fd, std::string_view what) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_MNT_ID, &stx) != 0)
    return sys_error("cannot stat " + std::string(what));
  if (!(stx.stx_mask & STATX_MNT_ID) || !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
    return internal_error("the kernel does not tell which mount " + std::string(what) +
                          " is on (statx STATX_MNT_ID); gpufrac-hook needs Linux 5.8 or later");
  return MountPlace{stx.stx_mnt_id, (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0,
                    makedev(stx.stx_dev_major, stx.stx_dev_minor), static_cast<ino_t>(stx.stx_ino)};
}

}  // namespace gpufrac::bundle
