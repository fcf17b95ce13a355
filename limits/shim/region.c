/* Mapping and validating the usage region. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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
