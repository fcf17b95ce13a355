/* /proc/<pid>/stat parsing and the pid + start-time liveness rule. No allocation. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gf_proc.h"

#define GF_START_MASK ((1ull << 38) - 1)

int gf_proc_stat_parse(const char* buf, size_t len, struct gf_proc_stat* out) {
  const char* close = NULL;
  for (size_t i = 0; i < len; i++) {
    if (buf[i] == ')') close = buf + i;
  }
  if (close == NULL) return -1;
  const char* p = close + 1;
  const char* end = buf + len;
  /* After ") " come fields 3 (state), 4, ... 22 (starttime). */
  for (int field = 3; field <= 22; field++) {
    while (p < end && *p == ' ') p++;
    if (p >= end) return -1;
    if (field == 3) out->state = *p;
    if (field == 22) {
      uint64_t v = 0;
      if (*p < '0' || *p > '9') return -1;
      while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
      out->start = v;
      return 0;
    }
    while (p < end && *p != ' ') p++;
  }
  return -1;
}

int gf_proc_stat_read(const char* path, struct gf_proc_stat* out) {
  char buf[1024];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  int err = n < 0 ? errno : 0;
  close(fd);
  if (n < 0) return -err;
  return gf_proc_stat_parse(buf, (size_t)n, out) == 0 ? 0 : -EINVAL;
}

enum gf_liveness gf_proc_liveness(const char* proc_root, uint64_t pid, uint64_t start) {
  char path[4200];
  struct gf_proc_stat st;
  if (pid == 0) return GF_DEAD;
  snprintf(path, sizeof path, "%s/%llu/stat", proc_root, (unsigned long long)pid);
  int rc = gf_proc_stat_read(path, &st);
  if (rc == -ENOENT || rc == -ESRCH) return GF_DEAD;
  if (rc != 0) return GF_UNKNOWN;
  if (st.state == 'Z' || st.state == 'X') return GF_DEAD;
  if (start != 0 && (st.start & GF_START_MASK) != (start & GF_START_MASK)) return GF_DEAD;
  return GF_ALIVE;
}
