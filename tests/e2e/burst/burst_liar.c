/* A tenant that lies in its usage region (/run/gpufrac/usage, read-write in every container): the
 * burstable-memory tests run it inside a container to check that the reclaimer believes none of it.
 *   burst_liar hide          sets every slot's used[] to 0: the container claims it holds nothing
 *   burst_liar ask MIB       asks the reclaimer for MIB MiB on device 0, as a shim within its request
 *                            would, and prints the answer ("answer 4") or "no answer" after 20 s
 *   burst_liar truncate      empties the region file under every mapping of it (a host
 *                            process touching the rest would get SIGBUS)
 *   burst_liar flip SECONDS [PATH...]
 *                            for that long, flips each file (default: the region) between 0 bytes
 *                            and its size (1 MiB for an empty or new one), writes garbage at its
 *                            start every 16th time and changes its mode (0600, 0666) every 64th,
 *                            then leaves it at its size, zeroed, mode 0666; prints "flipped N"
 *   burst_liar fill PATH...  writes as much as it can into each file, past its end (1 MiB writes
 *                            until one fails), and creates PATH.N files next to it while it can;
 *                            prints "filled BYTES" (the bytes that went in)
 * Static, so it runs in any root without the driver's libraries. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One file the tenant flips: its descriptor and the size it flips back to. */
struct flipped {
  int fd;
  off_t size;
};

static int flip(double seconds, int n, char** paths) {
  static const char junk[64] = "garbage garbage garbage garbage garbage garbage garbage garbage";
  static char* region[] = {(char*)GPUFRAC_CONTAINER_USAGE};
  struct flipped files[16];
  if (n == 0) n = 1, paths = region;
  if (n > 16) n = 16;
  for (int i = 0; i < n; i++) {
    struct stat st;
    files[i].fd = open(paths[i], O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (files[i].fd < 0 || fstat(files[i].fd, &st) != 0) return printf("cannot open %s\n", paths[i]), 2;
    files[i].size = st.st_size > 0 ? st.st_size : (off_t)(1 << 20);
  }
  unsigned long k = 0;
  for (double end = now_s() + seconds; now_s() < end; k++) {
    for (int i = 0; i < n; i++) {
      int fd = files[i].fd;
      if (ftruncate(fd, (k & 1) ? 0 : files[i].size) != 0) return printf("cannot truncate %s\n", paths[i]), 2;
      if ((k & 15) == 0 && pwrite(fd, junk, sizeof junk, 0) < 0) return printf("cannot write %s\n", paths[i]), 2;
      if ((k & 63) == 2 && fchmod(fd, (k & 64) ? 0600 : 0666) != 0) return printf("cannot chmod %s\n", paths[i]), 2;
    }
  }
  for (int i = 0; i < n; i++)
    if (ftruncate(files[i].fd, 0) != 0 || ftruncate(files[i].fd, files[i].size) != 0 || fchmod(files[i].fd, 0666) != 0)
      return 2;
  printf("flipped %lu\n", k);
  return 0;
}

/* Writes 1 MiB blocks at fd's end until one fails; the bytes written. */
static unsigned long long fill_fd(int fd) {
  static char block[1 << 20];
  memset(block, 'x', sizeof block);
  unsigned long long total = 0;
  if (lseek(fd, 0, SEEK_END) < 0) return 0;
  for (;;) {
    ssize_t w = write(fd, block, sizeof block);
    if (w <= 0) break;
    total += (unsigned long long)w;
    if (total >= (1ull << 34)) break; /* 16 GiB: a filesystem without a bound */
  }
  return total;
}

static int fill(int n, char** paths) {
  unsigned long long total = 0;
  for (int i = 0; i < n; i++) {
    int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      total += fill_fd(fd);
      close(fd);
    }
    for (int k = 0; k < 64; k++) { /* new files next to it, where the directory lets us */
      char name[4200];
      snprintf(name, sizeof name, "%s.%d", paths[i], k);
      int nf = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      if (nf < 0) break;
      total += fill_fd(nf);
      close(nf);
    }
  }
  printf("filled %llu\n", total);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "flip") == 0) return flip(strtod(argv[2], NULL), argc - 3, argv + 3);
  if (argc >= 3 && strcmp(argv[1], "fill") == 0) return fill(argc - 2, argv + 2);
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
  fprintf(stderr, "usage: burst_liar hide | ask MIB | truncate | flip SECONDS [PATH...] | fill PATH...\n");
  return 2;
}
