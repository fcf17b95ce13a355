/* Events: recording one marks the point its stream has reached (a virtual time of its device
 * context, fake_gpu.h); it completes when the context's clock gets there, at the exact simulated
 * time max(record, the real time the clock reached it): at once on an idle stream. An event never
 * recorded counts as complete, as CUDA's does. gpufracFakeEventTime (test-only) gives the
 * simulated completion time, so a test can see when the work before it ran. */
#include <stdlib.h>

#include "ckpt.h"
#include "fake_cuda.h"

struct fake_event {
  uint32_t magic; /* FAKE_EVENT_MAGIC while alive */
  unsigned flags;
  CUdevice dev;
  uint64_t cv;   /* the virtual time it completes at */
  uint64_t at;   /* atomic: when it was recorded, 0 = never */
  uint64_t done; /* atomic: its completion time once known, else 0 */
};
#define FAKE_EVENT_MAGIC 0x544e5645u

static struct fake_event* event_of(CUevent e) {
  struct fake_event* ev = (struct fake_event*)e;
  return ev != NULL && __atomic_load_n(&ev->magic, __ATOMIC_ACQUIRE) == FAKE_EVENT_MAGIC ? ev : NULL;
}

FAKE_API CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  CUdevice dev;
  CUresult rc = fake_current_device(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (event == NULL || (flags & ~3u) != 0) return CUDA_ERROR_INVALID_VALUE;
  struct fake_event* ev = calloc(1, sizeof *ev);
  if (ev == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *ev = (struct fake_event){FAKE_EVENT_MAGIC, flags, dev, 0, 0, 0};
  *event = (CUevent)ev;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuEventDestroy_v2(CUevent event) {
  struct fake_event* ev = event_of(event);
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  __atomic_store_n(&ev->magic, 0, __ATOMIC_RELEASE);
  free(ev);
  return CUDA_SUCCESS;
}

/* An event belongs to its context's device; recording it on another device's stream fails. While
 * the stream captures, the record is part of the graph: nothing happens now. */
static CUresult record(CUevent event, CUstream stream, int per_thread) {
  struct fake_event* ev = event_of(event);
  fake_cost(FAKE_COST_RECORD);
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_stream* s;
  CUresult rc = fake_stream_of(stream, per_thread, &s);
  if (rc != CUDA_SUCCESS) return rc;
  if (s->dev != ev->dev) return CUDA_ERROR_INVALID_HANDLE;
  if (__atomic_load_n(&s->capture, __ATOMIC_ACQUIRE) != NULL) return CUDA_SUCCESS;
  __atomic_store_n(&ev->at, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&ev->done, 0, __ATOMIC_RELEASE);
  ev->cv = fake_stream_point(s);
  fake_stream_after(s, ev->cv); /* the record is work of the stream: what follows waits for it */
  __atomic_store_n(&ev->at, fake_now_ns(), __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuEventRecord(CUevent event, CUstream stream) {
  return record(event, stream, 0);
}
FAKE_API CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
  return record(event, stream, 1);
}

static int complete(const struct fake_event* ev) {
  return __atomic_load_n(&ev->at, __ATOMIC_ACQUIRE) == 0 || ev->cv <= fake_gpu_v(ev->dev);
}

/* When a complete, recorded event completed (cached once known). */
static uint64_t time_of(struct fake_event* ev) {
  uint64_t t = __atomic_load_n(&ev->done, __ATOMIC_ACQUIRE);
  if (t != 0) return t;
  uint64_t at = __atomic_load_n(&ev->at, __ATOMIC_ACQUIRE), reached = fake_gpu_time_of(ev->dev, ev->cv);
  t = reached > at ? reached : at;
  __atomic_store_n(&ev->done, t, __ATOMIC_RELEASE);
  return t;
}

FAKE_API CUresult cuEventQuery(CUevent event) {
  struct fake_event* ev = event_of(event);
  fake_cost(FAKE_COST_QUERY);
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return complete(ev) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

FAKE_API CUresult cuEventSynchronize(CUevent event) {
  struct fake_event* ev = event_of(event);
  fake_cost(FAKE_COST_SYNC);
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  const int gate = fake_ckpt_enter(); /* ckpt.h */
  if (__atomic_load_n(&ev->at, __ATOMIC_ACQUIRE) != 0) fake_gpu_wait(ev->dev, ev->cv);
  fake_ckpt_leave(gate);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  struct fake_event *a = event_of(start), *b = event_of(end);
  if (ms == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (a == NULL || b == NULL || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_HANDLE;
  if (__atomic_load_n(&a->at, __ATOMIC_ACQUIRE) == 0 || __atomic_load_n(&b->at, __ATOMIC_ACQUIRE) == 0)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!complete(a) || !complete(b)) return CUDA_ERROR_NOT_READY;
  *ms = (float)((double)((int64_t)(time_of(b) - time_of(a))) / 1e6);
  return CUDA_SUCCESS;
}

static CUresult wait_event(CUstream stream, CUevent event, unsigned flags, int per_thread) {
  struct fake_event* ev = event_of(event);
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  struct fake_stream* s;
  CUresult rc = fake_stream_of(stream, per_thread, &s);
  if (rc != CUDA_SUCCESS || __atomic_load_n(&ev->at, __ATOMIC_ACQUIRE) == 0) return rc;
  if (s->dev == ev->dev)
    fake_stream_after(s, ev->cv);
  else
    fake_gpu_wait(ev->dev, ev->cv); /* another device's clock: the host waits instead */
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  return wait_event(stream, event, flags, 0);
}
FAKE_API CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned int flags) {
  return wait_event(stream, event, flags, 1);
}

FAKE_API CUresult gpufracFakeEventTime(CUevent event, uint64_t* ns) {
  struct fake_event* ev = event_of(event);
  if (ev == NULL || ns == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (__atomic_load_n(&ev->at, __ATOMIC_ACQUIRE) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!complete(ev)) return CUDA_ERROR_NOT_READY;
  *ns = time_of(ev);
  return CUDA_SUCCESS;
}
