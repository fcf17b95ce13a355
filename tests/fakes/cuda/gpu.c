/* The simulated GPU (fake_gpu.h) as this process sees it: the shared file, a device per UUID, a
 * client per tag, this process's context on each device, and work submitted to it, waited for
 * and dated in real time. The rules (slices, virtual clocks) are sim.c's. */
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
static uint64_t g_timeslice = FAKE_GPU_TIMESLICE_DEFAULT;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_slot[FAKE_MAX_DEVICES]; /* this process's context slot + 1 on each device (0: none yet) */

uint64_t fake_now_ns(void) {
  return fake_sim_now();
}

void fake_sleep_until(uint64_t t) {
  for (uint64_t now = fake_now_ns(); now < t; now = fake_now_ns()) {
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  }
}

int fake_gpu_config(void) {
  const char* ts = getenv(FAKE_GPU_TIMESLICE_ENV);
  if (ts != NULL && (g_timeslice = fake_sim_parse_timeslice(ts)) == 0) {
    fprintf(stderr,
            "fake libcuda: %s: bad value \"%s\"; accepted: default, short, medium, long or <N>ns|us|ms "
            "from 1us to 1000ms\n",
            FAKE_GPU_TIMESLICE_ENV, ts);
    return -1;
  }
  return fake_cost_config() != 0 ? -1 : fake_launch_blocking_config();
}

/* Opens (or creates, fully allocated) the file named by the environment; *fd stays open: this
 * process's liveness locks live on it. */
static struct fake_gpu_file* map_file(const char* path, int* fd) {
  *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  int err = *fd < 0 ? errno : posix_fallocate(*fd, 0, sizeof(struct fake_gpu_file));
  void* m = err == 0 ? mmap(NULL, sizeof(struct fake_gpu_file), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0) : NULL;
  if (err != 0 || m == MAP_FAILED) {
    fprintf(stderr, "fake libcuda: %s=%s: %s; the simulated GPU is private to this process\n", FAKE_GPU_ENV, path,
            strerror(err != 0 ? err : errno));
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return NULL;
  }
  return m;
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
  fake_sim_dev_init(&g_gpu->devs[i]);
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
  int fd = -1;
  struct fake_gpu_file* g = path != NULL && path[0] != '\0' ? map_file(path, &fd) : NULL;
  if (g == NULL) {
    void* m = mmap(NULL, sizeof *g, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) abort();
    g = m;
  }
  fake_sim_init_header(g, g_timeslice);
  fake_sim_bind(g, fd);
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

uint32_t fake_gpu_client_index(const char* tag) {
  struct fake_gpu_file* g = fake_gpu();
  if (tag == NULL) return g_client;
  return (uint32_t)entry_of(&g->clients[0].state, sizeof g->clients[0], FAKE_GPU_CLIENTS, client_match, client_fill,
                            tag);
}

void fake_gpu_completed(uint64_t kernels, uint64_t sm_ns) {
  struct fake_gpu_client* c = &fake_gpu()->clients[g_client];
  if (kernels != 0) __atomic_fetch_add(&c->kernels, kernels, __ATOMIC_RELAXED);
  if (sm_ns != 0) __atomic_fetch_add(&c->sm_ns, sm_ns, __ATOMIC_RELAXED);
}

int fake_gpu_device(CUdevice dev) {
  struct fake_gpu_file* g = fake_gpu();
  return entry_of(&g->devs[0].state, sizeof g->devs[0], FAKE_GPU_DEVICES, dev_match, dev_fill, fake_devices[dev].bytes);
}

/* This process's context on dev: its simulated device and slot (an MPS client's: the server's). */
static void ctx_of(CUdevice dev, int* gdev, int* slot) {
  *gdev = fake_gpu_device(dev);
  if (fake_mps_cap(dev) != 0) {
    fake_mps_join(dev, *gdev);
    *slot = FAKE_GPU_MPS_SLOT;
    return;
  }
  int s = __atomic_load_n(&g_slot[dev], __ATOMIC_ACQUIRE);
  if (s == 0) {
    pthread_mutex_lock(&g_ctx_mu);
    if ((s = g_slot[dev]) == 0)
      __atomic_store_n(&g_slot[dev], s = fake_sim_claim(*gdev, g_client) + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_ctx_mu);
  }
  *slot = s - 1;
}

/* The context's V now, with the newest slice and the time it is for. */
static uint64_t v_now(int gdev, int slot, uint64_t* h, uint64_t* now) {
  for (;;) {
    *now = fake_now_ns();
    *h = fake_sim_catch_up(gdev, *now);
    uint64_t v = *h == FAKE_SIM_AGAIN ? FAKE_SIM_AGAIN : fake_sim_v(gdev, slot, *h, *now);
    if (v != FAKE_SIM_AGAIN) return v;
  }
}

uint64_t fake_gpu_submit(CUdevice dev, uint64_t after, uint64_t duration, unsigned width, uint64_t* v_at,
                         uint64_t* sm_ns) {
  int gdev, slot;
  uint64_t h, a;
  ctx_of(dev, &gdev, &slot);
  uint64_t v = v_now(gdev, slot, &h, &a), run = duration;
  int mps = slot == FAKE_GPU_MPS_SLOT && fake_mps_cap(dev) != 0;
  if (mps && duration > 0) run = fake_mps_duration(dev, gdev, duration, width, v);
  uint64_t cv = (after > v ? after : v) + run;
  *sm_ns = mps ? duration * (width == 0 ? 100 : width) / 100 : 0;
  struct fake_gpu_ctx* x = &g_gpu->devs[gdev].ctxs[slot];
  uint32_t st = __atomic_load_n(&x->state, __ATOMIC_ACQUIRE);
  if ((st & 0xff) == FAKE_CTX_DEAD) /* a slot shared without its lock (all taken): in use, so alive */
    __atomic_compare_exchange_n(&x->state, &st, (st & ~0xffu) | FAKE_CTX_LIVE, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  if (duration > 0) {
    uint64_t cur = __atomic_load_n(&x->arrive, __ATOMIC_RELAXED);
    while (cur < a && !__atomic_compare_exchange_n(&x->arrive, &cur, a, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
    cur = __atomic_load_n(&x->cmax, __ATOMIC_RELAXED);
    while (cur < cv && !__atomic_compare_exchange_n(&x->cmax, &cur, cv, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
    if (mps) fake_mps_queued(dev, gdev, cv);
    __atomic_fetch_add(&g_gpu->devs[gdev].arrivals, 1, __ATOMIC_SEQ_CST);
    fake_sim_catch_up(gdev, fake_now_ns()); /* an idle device starts this context now */
  }
  __atomic_fetch_add(&g_gpu->clients[g_client].runs, 1, __ATOMIC_RELAXED);
  *v_at = v;
  return cv;
}

uint64_t fake_gpu_v(CUdevice dev) {
  int gdev, slot;
  uint64_t h, now;
  ctx_of(dev, &gdev, &slot);
  return v_now(gdev, slot, &h, &now);
}

void fake_gpu_wait(CUdevice dev, uint64_t cv) {
  int gdev, slot;
  ctx_of(dev, &gdev, &slot);
  for (;;) {
    uint64_t h, now, start, v = v_now(gdev, slot, &h, &now);
    if (v >= cv) return;
    uint32_t ch = FAKE_GPU_IDLE;
    uint64_t end = fake_sim_end(gdev, h);
    fake_sim_slice(&g_gpu->devs[gdev], h, &ch, &start);
    uint64_t wake = ch == (uint32_t)slot && now + (cv - v) < end ? now + (cv - v) : end;
    fake_sleep_until(wake > now && wake != UINT64_MAX ? wake : now + 20000);
  }
}

uint64_t fake_gpu_time_of(CUdevice dev, uint64_t cv) {
  int gdev, slot;
  uint64_t h, now;
  ctx_of(dev, &gdev, &slot);
  uint64_t v = v_now(gdev, slot, &h, &now);
  return v < cv ? 0 : fake_sim_when(gdev, slot, cv, h, now, v);
}
