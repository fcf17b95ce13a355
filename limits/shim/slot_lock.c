/* OFD locks on the slots' lock bytes (gf_lock.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gf_lock.h"
#include "gpufrac/limits_abi.h"

/* fcntl through the system call: glibc's fcntl is fcntl64@GLIBC_2.28 when built on a newer glibc. */
static int ofd(int fd, int cmd, short type, unsigned slot, struct flock* out) {
  struct flock f;
  memset(&f, 0, sizeof f); /* l_pid must be 0 for OFD locks */
  f.l_type = type;
  f.l_whence = SEEK_SET;
  f.l_start = (off_t)gpufrac_slot_lock_offset(slot);
  f.l_len = 1;
  long rc;
  do {
    rc = syscall(SYS_fcntl, fd, cmd, &f);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return -errno;
  if (out != NULL) *out = f;
  return 0;
}

int gf_slot_lock(int fd, unsigned slot) {
  int rc = ofd(fd, F_OFD_SETLK, F_WRLCK, slot, NULL);
  return rc == -EACCES ? -EAGAIN : rc;
}

void gf_slot_unlock(int fd, unsigned slot) {
  int saved = errno;
  ofd(fd, F_OFD_SETLK, F_UNLCK, slot, NULL);
  errno = saved;
}

int gf_slot_lock_held(int fd, unsigned slot) {
  struct flock f;
  int rc = ofd(fd, F_OFD_GETLK, F_WRLCK, slot, &f);
  if (rc != 0) return rc;
  return f.l_type != F_UNLCK;
}
