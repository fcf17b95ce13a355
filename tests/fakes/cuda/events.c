/* Events: recording one marks the point its stream has reached; it completes when the stream's
 * work before it has run on the simulated GPU (at once on an idle stream). An event never
 * recorded counts as complete, as CUDA's does. gpufracFakeEventTime (test-only) gives the
 * simulated completion time, so a test can see when the work before it ran. */
#include <stdlib.h>

#include "fake_cuda.h"

struct fake_event {
  uint32_t magic; /* FAKE_EVENT_MAGIC while alive */
  unsigned flags;
  CUdevice dev;
  uint64_t time; /* atomic: completion time, 0 = never recorded */
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
  *ev = (struct fake_event){FAKE_EVENT_MAGIC, flags, dev, 0};
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
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_stream* s;
  CUresult rc = fake_stream_of(stream, per_thread, &s);
  if (rc != CUDA_SUCCESS) return rc;
  if (s->dev != ev->dev) return CUDA_ERROR_INVALID_HANDLE;
  if (__atomic_load_n(&s->capture, __ATOMIC_ACQUIRE) != NULL) return CUDA_SUCCESS;
  uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE), now = fake_now_ns();
  __atomic_store_n(&ev->time, tail > now ? tail : now, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuEventRecord(CUevent event, CUstream stream) {
  return record(event, stream, 0);
}
FAKE_API CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
  return record(event, stream, 1);
}

FAKE_API CUresult cuEventQuery(CUevent event) {
  struct fake_event* ev = event_of(event);
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return __atomic_load_n(&ev->time, __ATOMIC_ACQUIRE) <= fake_now_ns() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

FAKE_API CUresult cuEventSynchronize(CUevent event) {
  struct fake_event* ev = event_of(event);
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  fake_sleep_until(__atomic_load_n(&ev->time, __ATOMIC_ACQUIRE));
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  struct fake_event *a = event_of(start), *b = event_of(end);
  if (ms == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (a == NULL || b == NULL || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t ta = __atomic_load_n(&a->time, __ATOMIC_ACQUIRE), tb = __atomic_load_n(&b->time, __ATOMIC_ACQUIRE);
  if (ta == 0 || tb == 0) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t now = fake_now_ns();
  if (ta > now || tb > now) return CUDA_ERROR_NOT_READY;
  *ms = (float)((double)((int64_t)(tb - ta)) / 1e6);
  return CUDA_SUCCESS;
}

static CUresult wait_event(CUstream stream, CUevent event, unsigned flags, int per_thread) {
  struct fake_event* ev = event_of(event);
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  struct fake_stream* s;
  CUresult rc = fake_stream_of(stream, per_thread, &s);
  if (rc != CUDA_SUCCESS) return rc;
  fake_stream_after(s, __atomic_load_n(&ev->time, __ATOMIC_ACQUIRE));
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
  uint64_t t = __atomic_load_n(&ev->time, __ATOMIC_ACQUIRE);
  if (t == 0) return CUDA_ERROR_INVALID_HANDLE;
  *ns = t;
  return CUDA_SUCCESS;
}
