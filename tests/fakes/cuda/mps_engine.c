/* MPS clients on the simulated GPU (fake_gpu.h "MPS clients"): a process that connected to an MPS
 * daemon (mps.c calls fake_gpu_client_mps) puts its work on a device into the MPS server's context,
 * shared with the device's other MPS clients, where its kernels run concurrently with theirs at
 * the speed its SM percent and their demands allow. Each client has a record on the device (its
 * cap, its latest kernel's width, when its work is done), owned by an OFD lock like a context. */
#include <fcntl.h>
#include <pthread.h>

#include "fake_cuda.h"
#include "fake_gpu.h"

static unsigned g_cap[FAKE_MAX_DEVICES]; /* this process's SM percent on each device; 0: not a client */
static int g_rec[FAKE_MAX_DEVICES];      /* its record + 1 on each device (0: none yet) */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

void fake_gpu_client_mps(unsigned device_ordinal, unsigned sm_percent) {
  if (device_ordinal >= FAKE_MAX_DEVICES) return;
  __atomic_store_n(&g_cap[device_ordinal], sm_percent == 0 || sm_percent > 100 ? 100u : sm_percent, __ATOMIC_RELEASE);
}

FAKE_API CUresult gpufracFakeMpsClient(unsigned device_ordinal, unsigned sm_percent) {
  if (device_ordinal >= FAKE_MAX_DEVICES) return CUDA_ERROR_INVALID_VALUE;
  fake_gpu_client_mps(device_ordinal, sm_percent);
  return CUDA_SUCCESS;
}

unsigned fake_mps_cap(CUdevice dev) {
  return dev >= 0 && dev < FAKE_MAX_DEVICES ? __atomic_load_n(&g_cap[dev], __ATOMIC_ACQUIRE) : 0;
}

static int lock_record(int gdev, int i) {
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  fl.l_start = (off_t)(FAKE_GPU_MPS_LOCK_BASE + (uint64_t)gdev * FAKE_GPU_MPS_CLIENTS + (uint64_t)i);
  fl.l_len = 1;
  return fcntl(fake_sim_fd(), F_OFD_SETLK, &fl) == 0;
}

/* The MPS server's context on gdev runs from the first client on, charged to FAKE_GPU_MPS_SERVER_TAG. */
static void start_server(struct fake_gpu_dev* d) {
  struct fake_gpu_ctx* x = &d->ctxs[FAKE_GPU_MPS_SLOT];
  uint32_t st = __atomic_load_n(&x->state, __ATOMIC_ACQUIRE);
  if ((st & 0xff) == FAKE_CTX_LIVE) return;
  x->client = fake_gpu_client_index(FAKE_GPU_MPS_SERVER_TAG);
  __atomic_compare_exchange_n(&x->state, &st, ((st >> 8) + 1) << 8 | FAKE_CTX_LIVE, 0, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
}

/* Claims a free record (or one whose owner died); the first one, shared, when all are taken. */
static int claim(struct fake_gpu_dev* d, int gdev, unsigned cap) {
  int i = 0;
  for (; i < FAKE_GPU_MPS_CLIENTS; i++) {
    uint32_t free = 0;
    if (fake_sim_fd() >= 0
            ? lock_record(gdev, i)
            : __atomic_compare_exchange_n(&d->mps[i].state, &free, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      break;
  }
  if (i == FAKE_GPU_MPS_CLIENTS) return 0;
  struct fake_gpu_mps* r = &d->mps[i];
  r->client = fake_gpu_client_index(NULL);
  r->cap = cap;
  __atomic_store_n(&r->width, 100, __ATOMIC_RELAXED);
  __atomic_store_n(&r->cmax, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&r->state, 1, __ATOMIC_RELEASE);
  return i;
}

int fake_mps_join(CUdevice dev, int gdev) {
  int r = __atomic_load_n(&g_rec[dev], __ATOMIC_ACQUIRE);
  if (r != 0) return r - 1;
  struct fake_gpu_dev* d = &fake_gpu()->devs[gdev];
  pthread_mutex_lock(&g_mu);
  if ((r = g_rec[dev]) == 0) {
    start_server(d);
    __atomic_store_n(&g_rec[dev], r = claim(d, gdev, fake_mps_cap(dev)) + 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_mu);
  return r - 1;
}

static unsigned min_u(unsigned a, unsigned b) {
  return a < b ? a : b;
}

uint64_t fake_mps_duration(CUdevice dev, int gdev, uint64_t duration, unsigned width, uint64_t v_now) {
  struct fake_gpu_dev* d = &fake_gpu()->devs[gdev];
  int me = fake_mps_join(dev, gdev);
  unsigned cap = fake_mps_cap(dev), w = width == 0 ? 100 : width, demand = 0;
  __atomic_store_n(&d->mps[me].width, w, __ATOMIC_RELEASE);
  for (int i = 0; i < FAKE_GPU_MPS_CLIENTS; i++) {
    const struct fake_gpu_mps* r = &d->mps[i];
    if (i == me)
      demand += min_u(cap, w);
    else if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == 1 && __atomic_load_n(&r->cmax, __ATOMIC_ACQUIRE) > v_now)
      demand += min_u(r->cap, __atomic_load_n(&r->width, __ATOMIC_ACQUIRE));
  }
  double speed = (cap < w ? (double)cap / w : 1.0) * (demand > 100 ? 100.0 / demand : 1.0);
  return (uint64_t)((double)duration / speed + 0.5);
}

void fake_mps_queued(CUdevice dev, int gdev, uint64_t cv) {
  struct fake_gpu_mps* r = &fake_gpu()->devs[gdev].mps[fake_mps_join(dev, gdev)];
  uint64_t cur = __atomic_load_n(&r->cmax, __ATOMIC_RELAXED);
  while (cur < cv && !__atomic_compare_exchange_n(&r->cmax, &cur, cv, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
}
