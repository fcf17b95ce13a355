/* This process's launches in flight on one device, per stream (arbiter_abi.h "Gated admission",
 * "Solo"): each stream counts its launches and records a mark (an event, CU_EVENT_DISABLE_TIMING |
 * CU_EVENT_BLOCKING_SYNC, made once and reused) after every launch when gated, after every stride-th
 * when solo; marks retire in order per stream, so a long kernel on one stream never holds back
 * launches on another. The bound K follows the stream's launches' duration d, measured from the
 * completions the process waits for: K = budget / d + 1 (at least 2; 1 when d is ten budgets or more, a
 * lease, and, gated, until d is measured),
 * at most GF_GATED_MAX gated and GF_SOLO_MAX solo, where stride = K / 8 (at most GF_SOLO_STRIDE):
 * a solo process makes one driver call per stride launches, and what it leaves unmarked is an
 * eighth of its budget. A stream's mutex serialises its marks only; counting is one atomic add. */
#include <string.h>

#include "gf_compute.h"

typedef CUresult (*record_fn)(CUevent, CUstream);
typedef CUresult (*event_fn)(CUevent);
typedef CUresult (*create_fn)(CUevent*, unsigned);

#define GF_LEGACY_STREAM ((CUstream)0x1)
#define GF_PER_THREAD_STREAM ((CUstream)0x2)

static uint64_t key_of(CUstream stream, int ptsz) {
  if (stream == GF_PER_THREAD_STREAM || (stream == NULL && ptsz)) return (uint64_t)pthread_self() | 2u;
  if (stream == NULL || stream == GF_LEGACY_STREAM) return 1;
  return (uint64_t)(uintptr_t)stream;
}

struct gf_stream* gf_stream_of(struct gf_streams* t, CUstream stream, int ptsz) {
  uint64_t key = key_of(stream, ptsz);
  unsigned h = (unsigned)((key >> 3) * 0x9e3779b97f4a7c15ull >> 59); /* 5 bits: GF_STREAMS */
  for (unsigned probe = 0; probe < GF_STREAMS; probe++) {
    struct gf_stream* s = &t->s[(h + probe) % GF_STREAMS];
    uint64_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
    if (k == key) return s;
    if (k == 0) {
      if (__atomic_compare_exchange_n(&s->key, &k, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return s;
      if (k == key) return s;
    }
  }
  return &t->s[GF_STREAMS];
}

static unsigned compute_bound(uint64_t d, uint64_t budget_ns, int solo) {
  if (d == 0) return solo ? 2 : 1; /* until measured (gated: one, so a long first launch is measured alone) */
  if (!solo && d >= 10 * budget_ns) return 1; /* a launch of a lease or more: one at a time */
  uint64_t k = budget_ns / d + 1, max = solo ? GF_SOLO_MAX : GF_GATED_MAX;
  return k < 2 ? 2 : k > max ? (unsigned)max : (unsigned)k; /* at least 2: the next one queued */
}

/* K for the stream's measured d, cached per mode (a division on every launch shows in a launch-bound
 * loop); racing threads compute the same value. */
static unsigned bound_of(struct gf_stream* s, uint64_t budget_ns, int solo) {
  uint64_t d = __atomic_load_n(&s->launch_ns, __ATOMIC_RELAXED) | 1ull << 63; /* never 0: 0 is "none cached" */
  if (GF_LIKELY(__atomic_load_n(&s->bound_d[solo], __ATOMIC_RELAXED) == d))
    return __atomic_load_n(&s->bound[solo], __ATOMIC_RELAXED);
  unsigned k = compute_bound(d & ~(1ull << 63), budget_ns, solo);
  __atomic_store_n(&s->bound[solo], k, __ATOMIC_RELAXED);
  __atomic_store_n(&s->bound_d[solo], d, __ATOMIC_RELAXED);
  return k;
}

static unsigned stride_of(struct gf_stream* s, uint64_t budget_ns, int solo) {
  if (!solo) return 1;
  unsigned k = bound_of(s, budget_ns, 1) / 8;
  return k < 1 ? 1 : k > GF_SOLO_STRIDE ? GF_SOLO_STRIDE : k;
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

/* Under s->mu: a mark after the launches counted so far (an event from another context is made
 * again in the current one). */
static void mark(struct gf_stream* s, CUstream stream, int ptsz, uint64_t now_ns) {
  unsigned tail = s->tail;
  if (tail - s->head >= GF_MARKS) return;
  CUevent* ev = &s->ev[tail % GF_MARKS];
  CUresult rc = *ev == NULL ? make_event(ev) : CUDA_SUCCESS;
  if (rc == CUDA_SUCCESS && record(*ev, stream, ptsz) != CUDA_SUCCESS) {
    destroy_event(*ev);
    rc = make_event(ev);
    if (rc == CUDA_SUCCESS) rc = record(*ev, stream, ptsz);
  }
  if (rc != CUDA_SUCCESS) return;
  uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
  s->at_seq[tail % GF_MARKS] = seq;
  s->at_ns[tail % GF_MARKS] = now_ns;
  s->tail = tail + 1;
  __atomic_store_n(&s->marked, seq, __ATOMIC_RELEASE);
}

static void average(struct gf_stream* s, uint64_t d) {
  uint64_t old = s->launch_ns;
  __atomic_store_n(&s->launch_ns, old == 0 ? d : (3 * old + d) / 4, __ATOMIC_RELAXED);
}

/* Under s->mu: the oldest mark is complete. Waited for (done at now): one measurement of d over the
 * launches since the last completion waited for. Found complete by a query at now: d is at most the
 * time since the mark over its launches, which only ever lowers the estimate (short kernels raise K
 * without a wait). */
static void retire(struct gf_stream* s, uint64_t now, int waited) {
  unsigned i = s->head % GF_MARKS;
  uint64_t before = __atomic_load_n(&s->done, __ATOMIC_RELAXED), n = s->at_seq[i] - before;
  if (n > 0 && n < (1u << 20)) {
    uint64_t from = waited && (s->last_done > s->at_ns[i] || n > 1) ? s->last_done : s->at_ns[i];
    uint64_t d = from != 0 && now > from ? (now - from) / (waited ? n : 1) : 0;
    if (waited && d != 0) average(s, d);
    if (!waited && (s->launch_ns == 0 || d / n < s->launch_ns)) average(s, d / n > 0 ? d / n : 1);
  }
  s->last_done = waited ? now : 0;
  if ((int64_t)(s->at_seq[i] - before) > 0) __atomic_store_n(&s->done, s->at_seq[i], __ATOMIC_RELEASE);
  s->head++;
}

int gf_stream_room(struct gf_stream* s, uint64_t budget_ns, int solo) {
  unsigned bound = bound_of(s, budget_ns, solo);
  if (GF_LIKELY(__atomic_load_n(&s->seq, __ATOMIC_RELAXED) - __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) < bound))
    return 1;
  pthread_mutex_lock(&s->mu);
  while (s->head != s->tail && done(s->ev[s->head % GF_MARKS])) retire(s, gf_now_ns(), 0);
  pthread_mutex_unlock(&s->mu);
  return __atomic_load_n(&s->seq, __ATOMIC_RELAXED) - __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) < bound;
}

/* Waits for the mark ev at head (taken under the lock) and retires it if no one did meanwhile. The
 * event is not reused while head has not moved past it (marks stop short of a full ring). */
static void sync_and_retire(struct gf_stream* s, CUevent ev, unsigned head) {
  event_fn sync = (event_fn)gf_cuda(GF_cuEventSynchronize);
  if (sync != NULL) sync(ev);
  uint64_t now = gf_now_ns();
  pthread_mutex_lock(&s->mu);
  if (s->head == head) retire(s, now, 1);
  pthread_mutex_unlock(&s->mu);
}

void gf_stream_launched(struct gf_stream* s, CUstream stream, int ptsz, uint64_t budget_ns, int solo, uint64_t now_ns) {
  uint64_t seq = __atomic_add_fetch(&s->seq, 1, __ATOMIC_ACQ_REL);
  if (GF_LIKELY(seq - __atomic_load_n(&s->marked, __ATOMIC_ACQUIRE) < stride_of(s, budget_ns, solo))) return;
  pthread_mutex_lock(&s->mu);
  mark(s, stream, ptsz, now_ns != 0 ? now_ns : gf_now_ns());
  pthread_mutex_unlock(&s->mu);
}

void gf_stream_called(struct gf_stream* s, uint64_t call_ns) {
  uint64_t old = __atomic_load_n(&s->call_ns, __ATOMIC_RELAXED); /* racing threads: one of them wins */
  if (call_ns == 0) call_ns = 1;                                 /* 0 is "not measured" */
  __atomic_store_n(&s->call_ns, old == 0 ? call_ns : (3 * old + call_ns) / 4, __ATOMIC_RELAXED);
}

void gf_stream_wait_oldest(struct gf_stream* s, CUstream stream, int ptsz) {
  pthread_mutex_lock(&s->mu);
  if (s->head == s->tail && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) != __atomic_load_n(&s->done, __ATOMIC_RELAXED))
    mark(s, stream, ptsz, gf_now_ns()); /* launches left unmarked (solo, or no room): mark them now */
  unsigned head = s->head;
  CUevent ev = head != s->tail ? s->ev[head % GF_MARKS] : NULL;
  if (ev == NULL) __atomic_store_n(&s->done, __atomic_load_n(&s->seq, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
  pthread_mutex_unlock(&s->mu);
  if (ev == NULL) return;
  sync_and_retire(s, ev, head);
}

void gf_streams_drain(struct gf_streams* t, void (*tick)(void*), void* arg) {
  for (unsigned i = 0; i <= GF_STREAMS; i++) {
    struct gf_stream* s = &t->s[i];
    if (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) == 0 && i < GF_STREAMS) continue;
    for (;;) {
      pthread_mutex_lock(&s->mu);
      while (s->head != s->tail && done(s->ev[s->head % GF_MARKS])) retire(s, gf_now_ns(), 0);
      unsigned head = s->head, tail = s->tail;
      CUevent ev = head != tail ? s->ev[head % GF_MARKS] : NULL;
      pthread_mutex_unlock(&s->mu);
      if (ev == NULL) break;
      tick(arg);
      sync_and_retire(s, ev, head);
    }
  }
}

uint64_t gf_streams_pending_ns(struct gf_streams* t, uint64_t unknown_ns) {
  uint64_t sum = 0;
  for (unsigned i = 0; i <= GF_STREAMS; i++) {
    struct gf_stream* s = &t->s[i];
    uint64_t n = __atomic_load_n(&s->seq, __ATOMIC_RELAXED) - __atomic_load_n(&s->done, __ATOMIC_RELAXED);
    uint64_t d = __atomic_load_n(&s->launch_ns, __ATOMIC_RELAXED);
    if (n != 0) sum += n * (d != 0 ? d : unknown_ns);
  }
  return sum;
}

/* Under s->mu: every mark is complete at now (a synchronise returned): the newest measures d over
 * the launches since the last completion waited for. */
static void synced(struct gf_stream* s, uint64_t now) {
  if (s->head == s->tail) return;
  unsigned last = (s->tail - 1) % GF_MARKS, first = s->head % GF_MARKS;
  uint64_t before = __atomic_load_n(&s->done, __ATOMIC_RELAXED), n = s->at_seq[last] - before;
  uint64_t from = s->last_done > s->at_ns[first] ? s->last_done : s->at_ns[first];
  if (n > 0 && n < (1u << 20) && now > from) {
    uint64_t d = (now - from) / n, old = s->launch_ns;
    __atomic_store_n(&s->launch_ns, old == 0 ? d : (3 * old + d) / 4, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&s->done, s->at_seq[last], __ATOMIC_RELEASE);
  s->head = s->tail;
  s->last_done = 0;
}

void gf_streams_synced(struct gf_streams* t, struct gf_stream* only) {
  uint64_t now = gf_now_ns();
  for (unsigned i = 0; i <= GF_STREAMS; i++) {
    struct gf_stream* s = &t->s[i];
    if ((only != NULL && s != only) || (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) == 0 && i < GF_STREAMS)) continue;
    pthread_mutex_lock(&s->mu);
    synced(s, now);
    pthread_mutex_unlock(&s->mu);
  }
}

void gf_streams_forget(struct gf_streams* t) {
  memset(t, 0, sizeof *t); /* a zeroed mutex is an initialised one (glibc) */
}
