/* This process's launches in flight on one device: an event recorded after each admitted launch
 * (CU_EVENT_DISABLE_TIMING: no timestamps; CU_EVENT_BLOCKING_SYNC: waiting sleeps), retired in
 * order with cuEventQuery. The events are made once and reused; an event from another context
 * (the launch's stream belongs to another one) is made again in the current one. The bound K
 * follows the launches' duration d, measured from the completions the holder waits for (the
 * interval between two, or from admission when the queue ran dry): K = budget / d + 1, at least
 * 2, so the work in flight stays under max(budget, one launch) plus one launch. The mutex is process-local: nothing
 * here is shared with another process. */
#include "gf_compute.h"

typedef CUresult (*record_fn)(CUevent, CUstream);
typedef CUresult (*event_fn)(CUevent);
typedef CUresult (*create_fn)(CUevent*, unsigned);

/* At least two, so the GPU has the next launch queued while the holder wakes for the last. */
static unsigned bound_of(uint64_t budget_ns, uint64_t launch_ns) {
  uint64_t k = budget_ns / (launch_ns != 0 ? launch_ns : 1) + 1;
  return k < 2 ? 2 : k > GF_FLIGHT_MAX ? GF_FLIGHT_MAX : (unsigned)k;
}

void gf_flight_init(struct gf_flight* f, uint64_t budget_ns) {
  pthread_mutex_init(&f->mu, NULL);
  f->head = f->tail = 0;
  f->budget_ns = budget_ns;
  f->launch_ns = budget_ns; /* until measured: two in flight */
  f->bound = bound_of(budget_ns, budget_ns);
  f->last_done = 0;
  for (int i = 0; i < GF_FLIGHT_RING; i++) f->ev[i] = NULL;
}

static CUresult make_event(CUevent* ev) {
  create_fn create = (create_fn)gf_cuda(GF_cuEventCreate);
  if (create == NULL) return gf_cuda_missing();
  CUresult rc = create(ev, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
  if (rc != CUDA_SUCCESS) *ev = NULL;
  return rc;
}

static void destroy_event(CUevent ev) {
  event_fn destroy = (event_fn)gf_cuda(GF_cuEventDestroy_v2);
  if (destroy != NULL && ev != NULL) destroy(ev);
}

static CUresult record(CUevent ev, CUstream stream, int ptsz) {
  record_fn rec = (record_fn)gf_cuda(ptsz ? GF_cuEventRecord_ptsz : GF_cuEventRecord);
  if (rec == NULL) rec = (record_fn)gf_cuda(GF_cuEventRecord);
  return rec != NULL ? rec(ev, stream) : gf_cuda_missing();
}

/* Complete, or an error (nothing to wait for). */
static int done(CUevent ev) {
  event_fn query = (event_fn)gf_cuda(GF_cuEventQuery);
  return query == NULL || query(ev) != CUDA_ERROR_NOT_READY;
}

void gf_flight_push(struct gf_flight* f, CUstream stream, int ptsz, uint64_t admitted_ns) {
  pthread_mutex_lock(&f->mu);
  unsigned tail = f->tail;
  f->admitted[tail % GF_FLIGHT_RING] = admitted_ns;
  CUevent* ev = &f->ev[tail % GF_FLIGHT_RING];
  CUresult rc = tail - f->head >= GF_FLIGHT_RING ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
  if (rc == CUDA_SUCCESS && *ev == NULL) rc = make_event(ev);
  if (rc == CUDA_SUCCESS && record(*ev, stream, ptsz) != CUDA_SUCCESS) {
    destroy_event(*ev); /* made in another context: make it again in this one */
    rc = make_event(ev);
    if (rc == CUDA_SUCCESS) rc = record(*ev, stream, ptsz);
  }
  if (rc == CUDA_SUCCESS) __atomic_store_n(&f->tail, tail + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&f->mu);
}

int gf_flight_room(struct gf_flight* f) {
  if (GF_LIKELY(gf_flight_count(f) < __atomic_load_n(&f->bound, __ATOMIC_RELAXED))) return 1;
  pthread_mutex_lock(&f->mu);
  while (f->head != f->tail && done(f->ev[f->head % GF_FLIGHT_RING])) {
    __atomic_store_n(&f->head, f->head + 1, __ATOMIC_RELEASE);
    f->last_done = 0; /* completed at some time before now: no measurement */
  }
  pthread_mutex_unlock(&f->mu);
  return gf_flight_count(f) < __atomic_load_n(&f->bound, __ATOMIC_RELAXED);
}

/* The launch at head completed at done_ns (its wait returned then): one measurement of d. */
static void measure(struct gf_flight* f, unsigned head, uint64_t done_ns) {
  uint64_t admitted = f->admitted[head % GF_FLIGHT_RING];
  uint64_t from = f->last_done > admitted ? f->last_done : admitted;
  if (from != 0 && done_ns > from) {
    f->launch_ns = (3 * f->launch_ns + (done_ns - from)) / 4;
    __atomic_store_n(&f->bound, bound_of(f->budget_ns, f->launch_ns), __ATOMIC_RELAXED);
  }
  f->last_done = done_ns;
}

void gf_flight_wait_oldest(struct gf_flight* f) {
  pthread_mutex_lock(&f->mu);
  unsigned head = f->head;
  CUevent ev = head != f->tail ? f->ev[head % GF_FLIGHT_RING] : NULL;
  pthread_mutex_unlock(&f->mu);
  if (ev == NULL) return;
  /* Not reused while head has not moved past it (the ring never fills: pushes stop short). */
  event_fn sync = (event_fn)gf_cuda(GF_cuEventSynchronize);
  if (sync != NULL) sync(ev);
  uint64_t now = gf_now_ns();
  pthread_mutex_lock(&f->mu);
  if (f->head == head) {
    measure(f, head, now);
    __atomic_store_n(&f->head, head + 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&f->mu);
}
