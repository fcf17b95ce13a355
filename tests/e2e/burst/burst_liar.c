/* A tenant that lies in its usage region (/run/gpufrac/usage, read-write in every container): the
 * burstable-memory tests run it inside a container to check that the reclaimer believes none of it.
 *   burst_liar hide          sets every slot's used[] to 0: the container claims it holds nothing
 *   burst_liar ask MIB       asks the reclaimer for MIB MiB on device 0, as a shim within its request
 *                            would, and prints the answer ("answer 4") or "no answer" after 20 s
 *   burst_liar truncate      empties the region file under every mapping of it (a host
 *                            process touching the rest would get SIGBUS)
 * Static, so it runs in any root without the driver's libraries. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpufrac/limits_abi.h"

static struct gpufrac_region* map_region(void) {
  int fd = open(GPUFRAC_CONTAINER_USAGE, O_RDWR | O_CLOEXEC);
  if (fd < 0) return NULL;
  void* p = mmap(NULL, sizeof(struct gpufrac_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : (struct gpufrac_region*)p;
}

static void hide(struct gpufrac_region* r) {
  for (unsigned i = 0; i < GPUFRAC_MAX_SLOTS; i++)
    for (unsigned d = 0; d < GPUFRAC_MAX_DEVICES; d++) __atomic_store_n(&r->slots[i].used[d], 0, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&r->usage_changes, 1, __ATOMIC_SEQ_CST);
  printf("hidden\n");
}

static int ask(struct gpufrac_region* r, unsigned long long mib) {
  __atomic_store_n(&r->reclaim_device, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&r->reclaim_bytes, (uint64_t)(mib << 20), __ATOMIC_SEQ_CST);
  uint32_t mine = __atomic_add_fetch(&r->reclaim_asked, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < 20000; i++) {
    if ((int32_t)(__atomic_load_n(&r->reclaim_answered, __ATOMIC_SEQ_CST) - mine) >= 0) {
      printf("answer %u\n", (unsigned)__atomic_load_n(&r->reclaim_answer, __ATOMIC_SEQ_CST));
      return 0;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  printf("no answer\n");
  return 1;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "truncate") == 0) {
    int fd = open(GPUFRAC_CONTAINER_USAGE, O_RDWR | O_CLOEXEC);
    int rc = fd >= 0 ? ftruncate(fd, 0) : -1;
    printf(rc == 0 ? "truncated\n" : "cannot truncate\n");
    return rc == 0 ? 0 : 2;
  }
  struct gpufrac_region* r = map_region();
  if (r == NULL) {
    printf("no region\n");
    return 2;
  }
  if (argc == 2 && strcmp(argv[1], "hide") == 0) return hide(r), 0;
  if (argc == 3 && strcmp(argv[1], "ask") == 0) return ask(r, strtoull(argv[2], NULL, 10));
  fprintf(stderr, "usage: burst_liar hide | ask MIB | truncate\n");
  return 2;
}
