/* The simulated GPU (fake_gpu.h): the shared file, a device per UUID, a client per tag, and the
 * submission of work as one run on a device's timeline. No lock: every shared field changes by
 * CAS or fetch-add, so a process killed anywhere leaves at most one unwritten run behind. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "fake_gpu.h"

static struct fake_gpu_file* g_gpu;
static uint32_t g_client;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

uint64_t fake_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fake_sleep_until(uint64_t t) {
  for (uint64_t now = fake_now_ns(); now < t; now = fake_now_ns()) {
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  }
}

/* Opens (or creates, fully allocated) the file named by the environment. */
static struct fake_gpu_file* map_file(const char* path) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  int err = fd < 0 ? errno : posix_fallocate(fd, 0, sizeof(struct fake_gpu_file));
  void* m = err == 0 ? mmap(NULL, sizeof(struct fake_gpu_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;
  if (fd >= 0) close(fd);
  if (err != 0 || m == MAP_FAILED) {
    fprintf(stderr, "fake libcuda: %s=%s: %s; the simulated GPU is private to this process\n", FAKE_GPU_ENV, path,
            strerror(err != 0 ? err : errno));
    return NULL;
  }
  return m;
}

static void init_header(struct fake_gpu_file* g) {
  uint32_t zero = 0;
  __atomic_compare_exchange_n(&g->size, &zero, (uint32_t)sizeof *g, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  zero = 0;
  __atomic_compare_exchange_n(&g->version, &zero, FAKE_GPU_VERSION, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  zero = 0;
  __atomic_compare_exchange_n(&g->magic, &zero, FAKE_GPU_MAGIC, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* Claims a free entry (state 0 -> 1 -> 2) or finds the one whose key matches: entries are filled in
 * order, so the first free one is reached only when no earlier entry holds the key. Returns the
 * index, -1 to look again (another process is writing an entry), or -2 when all are taken. */
static int find_or_claim(uint32_t* state, size_t stride, int count, int (*match)(int, const void*),
                         void (*fill)(int, const void*), const void* key) {
  for (int i = 0; i < count; i++) {
    uint32_t* st = (uint32_t*)((char*)state + (size_t)i * stride);
    uint32_t v = __atomic_load_n(st, __ATOMIC_ACQUIRE);
    if (v == 2 && match(i, key)) return i;
    if (v == 2) continue;
    if (v == 1 || !__atomic_compare_exchange_n(st, &v, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return -1;
    fill(i, key);
    __atomic_store_n(st, 2, __ATOMIC_RELEASE);
    return i;
  }
  return -2;
}

static int client_match(int i, const void* tag) {
  return strncmp(g_gpu->clients[i].tag, tag, FAKE_GPU_TAG - 1) == 0;
}
static void client_fill(int i, const void* tag) {
  snprintf(g_gpu->clients[i].tag, FAKE_GPU_TAG, "%s", (const char*)tag);
}
static int dev_match(int i, const void* uuid) {
  return memcmp(g_gpu->devs[i].uuid, uuid, 16) == 0;
}
static void dev_fill(int i, const void* uuid) {
  memcpy(g_gpu->devs[i].uuid, uuid, 16);
}

/* The entry for key; a full table shares its first entry (the README says how many fit). */
static int entry_of(uint32_t* state, size_t stride, int count, int (*match)(int, const void*),
                    void (*fill)(int, const void*), const void* key) {
  for (;;) {
    int i = find_or_claim(state, stride, count, match, fill, key);
    if (i >= 0) return i;
    if (i == -2) return 0;
    sched_yield();
  }
}

static void open_gpu(void) {
  const char* path = getenv(FAKE_GPU_ENV);
  struct fake_gpu_file* g = path != NULL && path[0] != '\0' ? map_file(path) : NULL;
  if (g == NULL) {
    void* m = mmap(NULL, sizeof *g, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) abort();
    g = m;
  }
  init_header(g);
  g_gpu = g;
  const char* tag = getenv(FAKE_GPU_CLIENT_ENV);
  char fallback[FAKE_GPU_TAG];
  snprintf(fallback, sizeof fallback, "pid-%d", (int)getpid());
  if (tag == NULL || tag[0] == '\0') tag = fallback;
  g_client =
      (uint32_t)entry_of(&g->clients[0].state, sizeof g->clients[0], FAKE_GPU_CLIENTS, client_match, client_fill, tag);
}

struct fake_gpu_file* fake_gpu(void) {
  pthread_once(&g_once, open_gpu);
  return g_gpu;
}

int fake_gpu_device(CUdevice dev) {
  struct fake_gpu_file* g = fake_gpu();
  return entry_of(&g->devs[0].state, sizeof g->devs[0], FAKE_GPU_DEVICES, dev_match, dev_fill, fake_devices[dev].bytes);
}

/* Makes room in the ring for index i: the run it replaces is retired (its time added to its
 * client's) once it has ended. */
static void retire_slot(struct fake_gpu_file* g, uint64_t i) {
  struct fake_gpu_run* r = &g->runs[i % FAKE_GPU_RING];
  uint64_t old = i >= FAKE_GPU_RING ? i - FAKE_GPU_RING + 1 : 0;
  if (old == 0 || __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) != old) return; /* nothing written there */
  uint32_t c = r->client;
  uint64_t start = r->start, end = r->end;
  fake_sleep_until(end);
  if (c < FAKE_GPU_CLIENTS) __atomic_fetch_add(&g->clients[c].retired_ns, end - start, __ATOMIC_SEQ_CST);
  __atomic_store_n(&r->seq, 0, __ATOMIC_SEQ_CST);
}

struct fake_run fake_gpu_submit(int gdev, uint64_t duration, uint64_t not_before) {
  struct fake_gpu_file* g = fake_gpu();
  struct fake_gpu_dev* d = &g->devs[gdev];
  uint64_t busy = __atomic_load_n(&d->busy_until, __ATOMIC_SEQ_CST), start, end;
  do {
    uint64_t now = fake_now_ns();
    start = now > busy ? now : busy;
    if (not_before > start) start = not_before;
    end = start + duration;
  } while (!__atomic_compare_exchange_n(&d->busy_until, &busy, end, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  uint64_t i = __atomic_fetch_add(&g->ring_next, 1, __ATOMIC_SEQ_CST);
  retire_slot(g, i);
  struct fake_gpu_run* r = &g->runs[i % FAKE_GPU_RING];
  r->client = g_client;
  r->dev = (uint32_t)gdev;
  r->start = start;
  r->end = end;
  __atomic_store_n(&r->seq, i + 1, __ATOMIC_RELEASE);
  __atomic_fetch_add(&g->clients[g_client].runs, 1, __ATOMIC_RELAXED);
  return (struct fake_run){start, end};
}
