/* A hostile tenant of a GPU's compute arbiter (the hostile-tenant tests in compute_hostile_test.sh):
 * what a container with a compute share can try against the files bound into it.
 *   arbiter_hostile forge SECONDS    keeps writing "held by my slot, claimed, deadline now + lease,
 *                                    busy until a second from now" into the lease file of each of its
 *                                    devices, launching nothing
 *   arbiter_hostile garbage SECONDS  writes random bytes over every file under the compute directory it
 *                                    can open read-write, again and again
 *   arbiter_hostile weights          tries to raise its weight and priority in each slots file: open it
 *                                    read-write, map it writable, make a read-only map writable, chmod
 *   arbiter_hostile flip SECONDS     flips each lease file between 0 bytes and its size (ftruncate)
 *   arbiter_hostile grow BYTES       writes each lease file's bytes up to BYTES (growing it)
 *   arbiter_hostile chmod MODE       chmod MODE (octal) on each lease file
 *   arbiter_hostile lanes SECONDS    tries to open every other slot's lane read-write, then keeps
 *                                    moving its own lane's vtime 60 s of its time behind vclock (issue
 *                                    43 item 1: the queue's lanes; layout 3)
 * Each prints one line of what it could do: "forge devices=N", "garbage rw=N refused=<name>:<errno>...",
 * "weights open=<errno> mmap=<errno> mprotect=<errno> chmod=<errno>" (0 where the attempt succeeded),
 * "flip files=N flips=F", "grow files=N size=S", "chmod files=N err=<errno>",
 * "lanes devices=N others=<errno of opening another's lane read-write>". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpufrac/arbiter_abi.h"
#include "gpufrac/limits_abi.h"

#define MAX_FILES 32

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char* err_name(int e) {
  return e == 0 ? "0" : e == EROFS ? "EROFS" : e == EACCES ? "EACCES" : e == EPERM ? "EPERM" : strerror(e);
}

static void* map(const char* path, size_t size, int writable) {
  int fd = open(path, writable ? O_RDWR : O_RDONLY);
  void* m = fd < 0 ? MAP_FAILED : mmap(NULL, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  if (fd >= 0) close(fd);
  return m == MAP_FAILED ? NULL : m;
}

/* Each "arbiter <uuid> <token>" line of the container's limit file: its lease file (mapped
 * read-write), slots file (read-only) and slot. Returns how many. */
static unsigned own_slots(struct gpufrac_arbiter** lease, const struct gpufrac_arbiter_slots** slots, unsigned* slot) {
  FILE* f = fopen(GPUFRAC_CONTAINER_LIMITS, "r");
  char line[512], uuid[128], path[256];
  unsigned long long token;
  unsigned n = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL && n < MAX_FILES) {
    if (sscanf(line, "arbiter %127s %llx", uuid, &token) != 2) continue;
    snprintf(path, sizeof path, "%s/%s%s", GPUFRAC_CONTAINER_COMPUTE, uuid, GPUFRAC_ARBITER_SLOTS_SUFFIX);
    const struct gpufrac_arbiter_slots* s = map(path, sizeof *s, 0);
    snprintf(path, sizeof path, "%s/%s", GPUFRAC_CONTAINER_COMPUTE, uuid);
    lease[n] = map(path, sizeof *lease[n], 1);
    for (unsigned i = 0; s != NULL && lease[n] != NULL && i < GPUFRAC_ARBITER_SLOTS; i++)
      if (s->slots[i].token == token) {
        slots[n] = s;
        slot[n++] = i;
        break;
      }
  }
  if (f != NULL) fclose(f);
  return n;
}

static int forge(double seconds) {
  struct gpufrac_arbiter* lease[MAX_FILES];
  const struct gpufrac_arbiter_slots* slots[MAX_FILES];
  unsigned slot[MAX_FILES], n = own_slots(lease, slots, slot);
  printf("forge devices=%u\n", n);
  fflush(stdout);
  uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
  for (uint32_t epoch = 1; now_ns() < end; epoch++) {
    for (unsigned i = 0; i < n; i++) {
      struct gpufrac_arbiter* a = lease[i];
      uint64_t now = now_ns();
      __atomic_store_n(&a->lease, gpufrac_lease_word(slot[i] + 1, 1, epoch, (uint32_t)(now / 1000000) + 20),
                       __ATOMIC_SEQ_CST);
      __atomic_store_n(&a->info_epoch, epoch + 1, __ATOMIC_SEQ_CST);
      __atomic_store_n(&a->busy, epoch + 1, __ATOMIC_SEQ_CST);
      __atomic_store_n(&a->active_ns, now, __ATOMIC_SEQ_CST);
      __atomic_store_n(&a->busy_until_ns, now + 1000000000ull, __ATOMIC_SEQ_CST);
    }
    usleep(500);
  }
  return n == 0;
}

static int garbage(double seconds) {
  DIR* d = opendir(GPUFRAC_CONTAINER_COMPUTE);
  struct dirent* e;
  int fds[MAX_FILES], n = 0;
  char refused[2048] = "";
  while (d != NULL && (e = readdir(d)) != NULL && n < MAX_FILES) {
    char path[512];
    if (e->d_name[0] == '.' || e->d_type == DT_DIR) continue; /* the lanes directories: see lanes */
    snprintf(path, sizeof path, "%s/%s", GPUFRAC_CONTAINER_COMPUTE, e->d_name);
    int fd = open(path, O_RDWR);
    if (fd >= 0) fds[n++] = fd;
    if (fd < 0)
      snprintf(refused + strlen(refused), sizeof refused - strlen(refused), " %s:%s", e->d_name, err_name(errno));
  }
  printf("garbage rw=%d refused=%s\n", n, refused[0] != '\0' ? refused + 1 : "none");
  fflush(stdout);
  unsigned char junk[4096];
  uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
  srand((unsigned)getpid());
  while (now_ns() < end) {
    for (int i = 0; i < n; i++) {
      struct stat st;
      fstat(fds[i], &st);
      for (off_t at = 0; at < st.st_size; at += (off_t)sizeof junk) {
        for (size_t k = 0; k < sizeof junk; k++) junk[k] = (unsigned char)rand();
        if (pwrite(fds[i], junk, sizeof junk, at) < 0) break;
      }
    }
    usleep(2000);
  }
  return n == 0;
}

/* The first errno of each attempt over every slots file (0: every attempt of that kind worked). */
static int weights(void) {
  DIR* d = opendir(GPUFRAC_CONTAINER_COMPUTE);
  struct dirent* e;
  int open_err = 0, mmap_err = 0, mprotect_err = 0, chmod_err = 0, seen = 0;
  while (d != NULL && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name), sfx = strlen(GPUFRAC_ARBITER_SLOTS_SUFFIX);
    if (len <= sfx || strcmp(e->d_name + len - sfx, GPUFRAC_ARBITER_SLOTS_SUFFIX) != 0) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", GPUFRAC_CONTAINER_COMPUTE, e->d_name);
    seen++;
    struct gpufrac_arbiter_slots* w = map(path, sizeof *w, 1);
    if (w == NULL && open_err == 0) open_err = errno;
    int fd = open(path, O_RDONLY);
    void* m = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof *w, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED && mmap_err == 0) mmap_err = errno;
    if (m != MAP_FAILED) w = m;
    void* r = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof *w, PROT_READ, MAP_SHARED, fd, 0);
    if (r != MAP_FAILED && mprotect(r, sizeof *w, PROT_READ | PROT_WRITE) != 0 && mprotect_err == 0)
      mprotect_err = errno;
    if (r != MAP_FAILED && mprotect_err == 0) w = r;
    if (chmod(path, 0666) != 0 && chmod_err == 0) chmod_err = errno;
    for (unsigned i = 0; w != NULL && i < GPUFRAC_ARBITER_SLOTS; i++) { /* only if any attempt worked */
      w->slots[i].weight_ppm = 1;
      w->slots[i].flags = 0;
    }
    if (fd >= 0) close(fd);
  }
  printf("weights files=%d open=%s mmap=%s mprotect=%s chmod=%s\n", seen, err_name(open_err), err_name(mmap_err),
         err_name(mprotect_err), err_name(chmod_err));
  fflush(stdout);
  return seen == 0;
}

/* The lease files under the compute directory (not the .slots files), opened read-write. */
static int lease_files(int* fds, int max) {
  DIR* d = opendir(GPUFRAC_CONTAINER_COMPUTE);
  struct dirent* e;
  int n = 0;
  size_t sfx = strlen(GPUFRAC_ARBITER_SLOTS_SUFFIX);
  while (d != NULL && (e = readdir(d)) != NULL && n < max) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || (len > sfx && strcmp(e->d_name + len - sfx, GPUFRAC_ARBITER_SLOTS_SUFFIX) == 0) ||
        strchr(e->d_name, '.') != NULL) /* <uuid>.lane, <uuid>.lanes: not lease files */
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", GPUFRAC_CONTAINER_COMPUTE, e->d_name);
    int fd = open(path, O_RDWR);
    if (fd >= 0) fds[n++] = fd;
  }
  if (d != NULL) closedir(d);
  return n;
}

static int flip(double seconds) {
  int fds[MAX_FILES], n = lease_files(fds, MAX_FILES);
  unsigned long flips = 0;
  uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
  while (now_ns() < end && n > 0) {
    for (int i = 0; i < n; i++) {
      flips += ftruncate(fds[i], 0) == 0;
      flips += ftruncate(fds[i], sizeof(struct gpufrac_arbiter)) == 0;
    }
  }
  printf("flip files=%d flips=%lu\n", n, flips);
  return n == 0;
}

static int grow(long long bytes) {
  int fds[MAX_FILES], n = lease_files(fds, MAX_FILES);
  static char chunk[1 << 16];
  memset(chunk, 'x', sizeof chunk);
  long long size = 0;
  for (int i = 0; i < n; i++) {
    for (long long at = sizeof(struct gpufrac_arbiter); at < bytes; at += (long long)sizeof chunk) {
      size_t len = bytes - at < (long long)sizeof chunk ? (size_t)(bytes - at) : sizeof chunk;
      if (pwrite(fds[i], chunk, len, (off_t)at) < 0) break;
    }
    struct stat st;
    if (fstat(fds[i], &st) == 0) size = st.st_size;
  }
  printf("grow files=%d size=%lld\n", n, size);
  return n == 0;
}

static int chmod_leases(const char* mode) {
  int fds[MAX_FILES], n = lease_files(fds, MAX_FILES), err = 0;
  for (int i = 0; i < n; i++)
    if (fchmod(fds[i], (mode_t)strtol(mode, NULL, 8)) != 0 && err == 0) err = errno;
  printf("chmod files=%d err=%s\n", n, err_name(err));
  return n == 0;
}

/* 60 s of a slot's own GPU time in virtual time (ns x 1000 / weight). */
static uint64_t minute_of(const struct gpufrac_arbiter_slot* s) {
  uint32_t w = s->weight_ppm == 0 ? 1 : s->weight_ppm;
  return 60000000000ull * 1000u / w;
}

/* Tries to open every lane under GPUFRAC_CONTAINER_COMPUTE/<uuid>.lanes read-write: the first errno
 * (0: one opened). */
static int others_writable(const char* uuid) {
  char dir[256], path[512];
  snprintf(dir, sizeof dir, "%s/%s%s", GPUFRAC_CONTAINER_COMPUTE, uuid, GPUFRAC_ARBITER_LANES_SUFFIX);
  DIR* d = opendir(dir);
  struct dirent* e;
  int err = d == NULL ? errno : ENOENT;
  while (d != NULL && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    int fd = open(path, O_RDWR);
    if (fd >= 0) close(fd), err = 0;
    if (fd < 0 && err != 0) err = errno;
  }
  if (d != NULL) closedir(d);
  return err;
}

static int lanes(double seconds) {
  struct gpufrac_arbiter* lease[MAX_FILES];
  const struct gpufrac_arbiter_slots* slots[MAX_FILES];
  struct gpufrac_arbiter_lane* own[MAX_FILES];
  unsigned slot[MAX_FILES], n = own_slots(lease, slots, slot);
  int others = ENOENT;
  for (unsigned k = 0; k < n; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s%s", GPUFRAC_CONTAINER_COMPUTE, slots[k]->uuid, GPUFRAC_ARBITER_LANE_SUFFIX);
    own[k] = map(path, sizeof *own[k], 1);
    others = others_writable(slots[k]->uuid);
  }
  printf("lanes devices=%u others=%s\n", n, err_name(others));
  fflush(stdout);
  uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
  while (now_ns() < end && n > 0) {
    for (unsigned k = 0; k < n; k++) { /* its own lane behind vclock: the others' it cannot write */
      uint64_t vclock = __atomic_load_n(&lease[k]->vclock, __ATOMIC_SEQ_CST);
      if (own[k] != NULL)
        __atomic_store_n(&own[k]->vtime, vclock - minute_of(&slots[k]->slots[slot[k]]), __ATOMIC_SEQ_CST);
    }
    usleep(500);
  }
  return n == 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  double seconds = argc > 2 ? atof(argv[2]) : 0;
  if (strcmp(mode, "forge") == 0) return forge(seconds);
  if (strcmp(mode, "garbage") == 0) return garbage(seconds);
  if (strcmp(mode, "weights") == 0) return weights();
  if (strcmp(mode, "flip") == 0) return flip(seconds);
  if (strcmp(mode, "grow") == 0) return grow(argc > 2 ? atoll(argv[2]) : 0);
  if (strcmp(mode, "chmod") == 0 && argc > 2) return chmod_leases(argv[2]);
  if (strcmp(mode, "lanes") == 0) return lanes(seconds);
  fprintf(stderr, "usage: arbiter_hostile forge|garbage|flip|lanes SECONDS | weights | grow BYTES | chmod MODE\n");
  return 2;
}
