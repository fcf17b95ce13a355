/* Streams: work runs in stream order on the simulated GPU (gpu.c), the streams of this process's
 * context on a device concurrently. Each stream keeps the virtual times at which its pending
 * launches are done; a launch with FAKE_STREAM_QUEUE of them pending blocks until the oldest
 * completes, as a real driver blocks when its queue is full. The legacy stream (NULL) is one per
 * device and process and synchronises with the blocking streams (created with flags 0, and the
 * per-thread default streams): its work waits for theirs, and theirs for its.
 * CU_STREAM_NON_BLOCKING streams wait only for themselves. With CUDA_LAUNCH_BLOCKING=1 a launch
 * returns only once its work has run (launch.c). */
#include <stdlib.h>

#include "ckpt.h"
#include "fake_cuda.h"

static struct fake_stream g_legacy[FAKE_MAX_DEVICES];
static pthread_mutex_t g_legacy_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread struct fake_stream* t_own[FAKE_MAX_DEVICES];
static uint64_t g_dev_tail[FAKE_MAX_DEVICES];     /* atomic max of this process's work per device */
static uint64_t g_dev_blocking[FAKE_MAX_DEVICES]; /* atomic max of its blocking streams' work */

static void stream_init(struct fake_stream* s, CUdevice dev, int kind) {
  pthread_mutex_init(&s->mu, NULL);
  s->dev = dev;
  s->kind = kind;
  fake_gpu_device(dev);
  __atomic_store_n(&s->magic, FAKE_STREAM_MAGIC, __ATOMIC_RELEASE);
}

static struct fake_stream* legacy(CUdevice dev) {
  struct fake_stream* s = &g_legacy[dev];
  if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) == FAKE_STREAM_MAGIC) return s;
  pthread_mutex_lock(&g_legacy_mu);
  if (s->magic != FAKE_STREAM_MAGIC) stream_init(s, dev, FAKE_STREAM_LEGACY);
  pthread_mutex_unlock(&g_legacy_mu);
  return s;
}

static struct fake_stream* per_thread(CUdevice dev) {
  if (t_own[dev] == NULL) {
    struct fake_stream* s = calloc(1, sizeof *s); /* lives as long as the process */
    if (s == NULL) return legacy(dev);
    stream_init(s, dev, FAKE_STREAM_BLOCKING);
    t_own[dev] = s;
  }
  return t_own[dev];
}

CUresult fake_stream_of(CUstream s, int per_thread_default, struct fake_stream** out) {
  if (s != NULL && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) {
    struct fake_stream* st = (struct fake_stream*)s;
    if (__atomic_load_n(&st->magic, __ATOMIC_ACQUIRE) != FAKE_STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
    *out = st;
    return CUDA_SUCCESS;
  }
  CUdevice dev;
  CUresult rc = fake_current_device(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  int own = s == CU_STREAM_PER_THREAD || (s == NULL && per_thread_default);
  *out = own ? per_thread(dev) : legacy(dev);
  return CUDA_SUCCESS;
}

/* Drops the pending launches done by virtual time v, and counts them as this process's. */
static void drop_completed(struct fake_stream* s, uint64_t v) {
  uint64_t kernels = 0, sm = 0;
  while (s->count > 0 && s->pending[s->head] <= v) {
    sm += s->pending_sm[s->head];
    s->head = (s->head + 1) % FAKE_STREAM_QUEUE;
    s->count--;
    kernels++;
  }
  fake_gpu_completed(kernels, sm);
}

static void raise_to(uint64_t* word, uint64_t v) {
  uint64_t cur = __atomic_load_n(word, __ATOMIC_RELAXED);
  while (cur < v && !__atomic_compare_exchange_n(word, &cur, v, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}

static uint64_t max2(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

uint64_t fake_stream_point(struct fake_stream* s) {
  uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
  if (s->kind == FAKE_STREAM_LEGACY) return max2(tail, __atomic_load_n(&g_dev_blocking[s->dev], __ATOMIC_ACQUIRE));
  if (s->kind == FAKE_STREAM_BLOCKING) return max2(tail, __atomic_load_n(&legacy(s->dev)->tail, __ATOMIC_ACQUIRE));
  return tail;
}

static CUresult enqueue(struct fake_stream* s, uint64_t duration, unsigned width, unsigned nodes);

CUresult fake_stream_enqueue(struct fake_stream* s, uint64_t duration, unsigned width, unsigned nodes) {
  fake_cost(FAKE_COST_LAUNCH);
  const int gate = fake_ckpt_enter(); /* ckpt.h: no launch while locked */
  CUresult rc = enqueue(s, duration, width, nodes);
  fake_ckpt_leave(gate);
  return rc;
}

static CUresult enqueue(struct fake_stream* s, uint64_t duration, unsigned width, unsigned nodes) {
  pthread_mutex_lock(&s->mu);
  if (s->capture != NULL) {
    s->capture->total += duration;
    s->capture->nodes += nodes;
    if (width > s->capture->width) s->capture->width = width;
    pthread_mutex_unlock(&s->mu);
    return CUDA_SUCCESS;
  }
  while (s->count == FAKE_STREAM_QUEUE) {
    drop_completed(s, fake_gpu_v(s->dev));
    if (s->count == FAKE_STREAM_QUEUE) fake_gpu_wait(s->dev, s->pending[s->head]);
  }
  uint64_t v, sm, cv = fake_gpu_submit(s->dev, fake_stream_point(s), duration, width, &v, &sm);
  drop_completed(s, v);
  __atomic_store_n(&s->tail, cv, __ATOMIC_RELEASE);
  s->pending_sm[(s->head + s->count) % FAKE_STREAM_QUEUE] = sm;
  s->pending[(s->head + s->count++) % FAKE_STREAM_QUEUE] = cv;
  raise_to(&g_dev_tail[s->dev], cv);
  if (s->kind == FAKE_STREAM_BLOCKING) raise_to(&g_dev_blocking[s->dev], cv);
  pthread_mutex_unlock(&s->mu);
  if (fake_launch_blocking) { /* the launch returns once its kernel ran (the call's own duration) */
    fake_gpu_wait(s->dev, cv);
    pthread_mutex_lock(&s->mu);
    drop_completed(s, cv);
    pthread_mutex_unlock(&s->mu);
  }
  return CUDA_SUCCESS;
}

CUresult fake_stream_wait(struct fake_stream* s) {
  pthread_mutex_lock(&s->mu);
  int capturing = s->capture != NULL;
  pthread_mutex_unlock(&s->mu);
  if (capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  const int gate = fake_ckpt_enter();
  uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
  fake_gpu_wait(s->dev, s->kind == FAKE_STREAM_LEGACY ? fake_stream_point(s) : tail);
  fake_ckpt_leave(gate);
  pthread_mutex_lock(&s->mu);
  drop_completed(s, tail);
  pthread_mutex_unlock(&s->mu);
  return CUDA_SUCCESS;
}

void fake_stream_after(struct fake_stream* s, uint64_t cv) {
  pthread_mutex_lock(&s->mu);
  raise_to(&s->tail, cv);
  pthread_mutex_unlock(&s->mu);
}

uint64_t fake_device_tail(CUdevice dev) {
  return __atomic_load_n(&g_dev_tail[dev], __ATOMIC_ACQUIRE);
}

FAKE_API CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  CUdevice dev;
  CUresult rc = fake_current_device(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (stream == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0) return CUDA_ERROR_INVALID_VALUE;
  struct fake_stream* s = calloc(1, sizeof *s);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  stream_init(s, dev, flags & CU_STREAM_NON_BLOCKING ? FAKE_STREAM_NON_BLOCKING : FAKE_STREAM_BLOCKING);
  *stream = (CUstream)s;
  return CUDA_SUCCESS;
}

/* The stream's pending work still runs (as on a real GPU); the handle is dead at once. */
FAKE_API CUresult cuStreamDestroy_v2(CUstream stream) {
  struct fake_stream* s;
  if (stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
  CUresult rc = fake_stream_of(stream, 0, &s);
  if (rc != CUDA_SUCCESS) return rc;
  __atomic_store_n(&s->magic, 0, __ATOMIC_RELEASE);
  free(s->capture);
  pthread_mutex_destroy(&s->mu);
  free(s);
  return CUDA_SUCCESS;
}

static CUresult stream_sync(CUstream stream, int per_thread_default) {
  struct fake_stream* s;
  fake_cost(FAKE_COST_SYNC);
  CUresult rc = fake_stream_of(stream, per_thread_default, &s);
  return rc != CUDA_SUCCESS ? rc : fake_stream_wait(s);
}

static CUresult stream_query(CUstream stream, int per_thread_default) {
  struct fake_stream* s;
  fake_cost(FAKE_COST_QUERY);
  CUresult rc = fake_stream_of(stream, per_thread_default, &s);
  if (rc != CUDA_SUCCESS) return rc;
  uint64_t until = s->kind == FAKE_STREAM_LEGACY ? fake_stream_point(s) : __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
  return until <= fake_gpu_v(s->dev) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

FAKE_API CUresult cuStreamSynchronize(CUstream stream) {
  return stream_sync(stream, 0);
}
FAKE_API CUresult cuStreamSynchronize_ptsz(CUstream stream) {
  return stream_sync(stream, 1);
}
FAKE_API CUresult cuStreamQuery(CUstream stream) {
  return stream_query(stream, 0);
}
FAKE_API CUresult cuStreamQuery_ptsz(CUstream stream) {
  return stream_query(stream, 1);
}

FAKE_API CUresult cuCtxSynchronize(void) {
  CUdevice dev;
  fake_cost(FAKE_COST_SYNC);
  CUresult rc = fake_current_device(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  const int gate = fake_ckpt_enter();
  fake_gpu_wait(dev, fake_device_tail(dev));
  fake_ckpt_leave(gate);
  return CUDA_SUCCESS;
}
