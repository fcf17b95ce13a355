/* Mapping and validating the usage region. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gf_region.h"

static void set_if_zero(uint32_t* field, uint32_t value) {
  uint32_t zero = 0;
  __atomic_compare_exchange_n(field, &zero, value, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

int gf_region_init(struct gpufrac_region* r, char* err, size_t err_len) {
  set_if_zero(&r->version, GPUFRAC_REGION_VERSION);
  set_if_zero(&r->region_size, (uint32_t)sizeof(struct gpufrac_region));
  set_if_zero(&r->slot_count, GPUFRAC_MAX_SLOTS);
  set_if_zero(&r->magic, GPUFRAC_REGION_MAGIC);
  uint32_t magic = __atomic_load_n(&r->magic, __ATOMIC_SEQ_CST);
  uint32_t version = __atomic_load_n(&r->version, __ATOMIC_SEQ_CST);
  uint32_t size = __atomic_load_n(&r->region_size, __ATOMIC_SEQ_CST);
  uint32_t slots = __atomic_load_n(&r->slot_count, __ATOMIC_SEQ_CST);
  if (magic != GPUFRAC_REGION_MAGIC) {
    snprintf(err, err_len, "wrong magic 0x%08x; accepted: 0x%08x (gpufrac usage region)", magic, GPUFRAC_REGION_MAGIC);
  } else if (version != GPUFRAC_REGION_VERSION) {
    snprintf(err, err_len, "region version %u; accepted: %u", version, GPUFRAC_REGION_VERSION);
  } else if (size != sizeof(struct gpufrac_region) || slots != GPUFRAC_MAX_SLOTS) {
    snprintf(err, err_len, "region size %u with %u slots; accepted: %zu with %d", size, slots,
             sizeof(struct gpufrac_region), GPUFRAC_MAX_SLOTS);
  } else {
    return 0;
  }
  return -1;
}

/* Bytes of storage the file has (st_blocks), by the raw system call: glibc's fstat is GLIBC_2.33
 * when built on a newer glibc, and the kernel's struct stat is glibc's on x86-64 and aarch64 (the
 * shim's targets). -1 when it cannot be asked. */
static long long allocated_bytes(int fd) {
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0) return -1;
  return (long long)st.st_blocks * 512;
}

/* Every page of the region has its storage before it is mapped: a page first touched through a
 * mapping on a full filesystem is SIGBUS, which would kill this process for a reason it cannot
 * know. The host allocates the whole region when it creates it, so the check passes at once (and
 * a seccomp profile that refuses fallocate changes nothing); a region with a hole (written by an
 * older gpufrac) is filled here with fallocate mode 0, which writes no byte (the other processes'
 * live counts are safe), and when that fails (the state directory is full) it is not mapped.
 * Returns 0, or -1 with the reason in err. */
static int allocate_all(int fd, char* err, size_t err_len) {
  const off_t size = (off_t)sizeof(struct gpufrac_region);
  if (allocated_bytes(fd) >= (long long)size) return 0;
  int rc;
  do {
    rc = fallocate(fd, 0, 0, size);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return 0;
  int e = errno;
  snprintf(err, err_len, "its hole cannot be allocated: %s%s", strerror(e),
           e == ENOSPC || e == EDQUOT ? " (its filesystem is full)" : "");
  return -1;
}

struct gpufrac_region* gf_region_map(const char* path, char* err, size_t err_len) {
  int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    snprintf(err, err_len, "cannot open read-write: %s", strerror(errno));
    return NULL;
  }
  /* lseek rather than fstat: fstat is GLIBC_2.33 when built on a newer glibc. */
  off_t size = lseek(fd, 0, SEEK_END);
  if (size != (off_t)sizeof(struct gpufrac_region)) {
    snprintf(err, err_len, "not a file of %zu bytes", sizeof(struct gpufrac_region));
    close(fd);
    return NULL;
  }
  if (allocate_all(fd, err, err_len) != 0) {
    close(fd);
    return NULL;
  }
  void* m = mmap(NULL, sizeof(struct gpufrac_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int map_errno = errno;
  close(fd);
  if (m == MAP_FAILED) {
    snprintf(err, err_len, "cannot map: %s", strerror(map_errno));
    return NULL;
  }
  if (gf_region_init((struct gpufrac_region*)m, err, err_len) != 0) {
    munmap(m, sizeof(struct gpufrac_region));
    return NULL;
  }
  return (struct gpufrac_region*)m;
}

unsigned gf_region_slots_in_use(const struct gpufrac_region* r) {
  uint32_t hw = __atomic_load_n(&r->slot_high_water, __ATOMIC_SEQ_CST);
  return hw < GPUFRAC_MAX_SLOTS ? hw : GPUFRAC_MAX_SLOTS;
}
