/* The launch gate (docs/architecture.md "Compute share", arbiter_abi.h): a launch passes at once
 * while the process holds the lease and its stream has room in flight (gf_lease_admits, one clock
 * read, the stream's count); solo, that is all, with a mark every stride launches. Otherwise one
 * thread at a time ends, drains, renews or acquires the lease under a process-local mutex (no lock
 * is shared with another process), and a process kept waiting past its bound runs ungated until the
 * arbiter hands it the lease again. */
#include <time.h>

#include "gf_call.h"
#include "gf_compute.h"

#define GF_TOUCH_NS 100000 /* active_ns is stored at most this often (idle_us is 2 ms) */

/* When this thread's gated launch was admitted (the call's start; coarse when solo). */
static __thread uint64_t t_from __attribute__((tls_model("initial-exec")));

static uint64_t budget_ns(const struct gf_compute_dev* d, int solo) {
  return solo ? (uint64_t)d->lease.p.lease_ms * 1000000u : (uint64_t)d->lease.p.inflight_us * 1000u;
}

/* CLOCK_MONOTONIC_COARSE: a few ns where the precise clock costs about 20 on the launch path, but it
 * moves by ticks (1-4 ms). A solo holder reads it (nobody waits on it): it admits at most a tick past
 * its deadline (well within grace_ms), stores active_ns once per tick, and says its work in flight may
 * last a lease (busy_until_ns), so a competitor that appears does not take it for idle meanwhile. */
static uint64_t coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An admission at t (coarse when solo, else precise): the holder is active (active_ns, the precise
 * clock), and says when the work it has in flight should be done (busy_until_ns, at most busy_ms
 * ahead; gated, by what the launch's stream has in flight): idle only after that. Stored at most
 * every GF_TOUCH_NS. */
static void touch(struct gf_compute_dev* d, struct gf_stream* s, int solo, uint64_t t) {
  if (t - __atomic_load_n(&d->touched_ns, __ATOMIC_RELAXED) < GF_TOUCH_NS) return;
  __atomic_store_n(&d->touched_ns, t, __ATOMIC_RELAXED);
  uint64_t now = solo ? gf_now_ns() : t;
  gf_lease_touch(&d->lease, now);
  uint64_t cap = (uint64_t)d->lease.p.busy_ms * 1000000u, ahead = (uint64_t)d->lease.p.lease_ms * 1000000u;
  if (!solo) {
    uint64_t n = __atomic_load_n(&s->seq, __ATOMIC_RELAXED) - __atomic_load_n(&s->done, __ATOMIC_RELAXED) + 1;
    uint64_t dur = __atomic_load_n(&s->launch_ns, __ATOMIC_RELAXED);
    ahead = dur != 0 && n * dur < cap ? n * dur : cap;
  }
  if (ahead > cap) ahead = cap;
  uint64_t until = now + ahead, cur = __atomic_load_n(&d->lease.arb->busy_until_ns, __ATOMIC_RELAXED);
  if ((int64_t)(until - cur) > 0) __atomic_store_n(&d->lease.arb->busy_until_ns, until, __ATOMIC_RELAXED);
}

/* The holder waits for its own GPU work: busy (counted, several threads may wait), announcing what
 * its launches in flight still take, and a call that runs its work inside it (call_ns, GF_NO_CALL
 * for none) what it should take (gf_call_expect_ns). The last to stop charges the work that outlived
 * a lease taken over meanwhile (debt). */
static void wait_begin(struct gf_compute_dev* d, uint64_t call_ns) {
  if (__atomic_fetch_add(&d->waiting, 1, __ATOMIC_SEQ_CST) != 0) return;
  struct gf_lease* l = &d->lease;
  uint64_t cap = (uint64_t)l->p.busy_ms * 1000000u; /* a launch not measured yet may be long: the most */
  uint64_t expect = gf_call_expect_ns(l, gf_streams_pending_ns(&d->streams, cap), call_ns);
  d->wait_from = gf_now_ns();
  d->wait_held = gf_lease_busy(l, 1, expect) != 0;
}
static void wait_end(struct gf_compute_dev* d) {
  if (__atomic_fetch_sub(&d->waiting, 1, __ATOMIC_SEQ_CST) != 1) return;
  gf_lease_busy(&d->lease, 0, 0);
  if (d->wait_held) gf_lease_debt(&d->lease, d->wait_from);
}

static void extend(void* arg) {
  struct gf_compute_dev* d = arg;
  gf_lease_extend(&d->lease, gf_now_ns());
}

/* gf_lease_end's drain: every marked launch in flight completes; the lease stays held meanwhile. */
static void drain(void* arg) {
  struct gf_compute_dev* d = arg;
  wait_begin(d, GF_NO_CALL);
  gf_streams_drain(&d->streams, extend, d);
  wait_end(d);
}

/* Under d->mu: 1 admitted, 0 waited, ended, renewed or acquired (look again), -1 not gated now. */
static int gate_step(struct gf_compute_dev* d, struct gf_stream* s, CUstream stream, int ptsz) {
  struct gf_lease* l = &d->lease;
  uint64_t now = gf_now_ns();
  enum gf_lease_state st = gf_lease_state(l, now);
  int solo = __atomic_load_n(&l->solo, __ATOMIC_RELAXED);
  if (st == GF_LEASE_HOLD && gf_stream_room(s, budget_ns(d, solo), solo)) {
    touch(d, s, solo, now);
    return 1;
  }
  if (st == GF_LEASE_HOLD) {
    wait_begin(d, GF_NO_CALL);
    gf_stream_wait_oldest(s, stream, ptsz);
    wait_end(d);
  } else if (st == GF_LEASE_END) {
    gf_lease_end(l, drain, d);
    d->probation = 0; /* it ended a lease itself: the arbiter works */
  } else if (d->probation) {
    gf_compute_bypass(d); /* back from a bypass, the lease lost before its end: no second wait */
    return -1;
  } else {
    int r = gf_lease_acquire(l);
    if (r < 0) gf_compute_disable(d);
    if (r > 0) gf_compute_bypass(d);
    if (r != 0) return -1;
  }
  return 0;
}

static int gate_slow(struct gf_compute_dev* d, struct gf_stream* s, CUstream stream, int ptsz) {
  int r = 0;
  pthread_mutex_lock(&d->mu);
  while (r == 0 && __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == GF_DEV_GATED) r = gate_step(d, s, stream, ptsz);
  pthread_mutex_unlock(&d->mu);
  return r > 0;
}

/* Bypassing: at most every heartbeat, say so (runnable) and try to claim the lease; once claimed,
 * the device is gated again. 1 when it is. */
static int bypass_retry(struct gf_compute_dev* d, uint64_t now) {
  if ((int64_t)(now - __atomic_load_n(&d->retry_ns, __ATOMIC_RELAXED)) < 0 ||
      __atomic_exchange_n(&d->retrying, 1, __ATOMIC_ACQUIRE) != 0) /* one thread tries; the others pass */
    return 0;
  pthread_mutex_lock(&d->mu); /* not held by a gated thread for long: the device bypasses */
  int r = __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == GF_DEV_BYPASS ? gf_lease_try(&d->lease) : 1;
  __atomic_store_n(&d->retry_ns, now + (uint64_t)d->lease.p.heartbeat_us * 1000, __ATOMIC_RELAXED);
  if (r > 0) {
    d->probation = 1;
    __atomic_store_n(&d->state, GF_DEV_GATED, __ATOMIC_RELEASE);
  }
  if (r < 0) gf_compute_disable(d);
  pthread_mutex_unlock(&d->mu);
  __atomic_store_n(&d->retrying, 0, __ATOMIC_RELEASE);
  return r > 0;
}

struct gf_gate gf_gate_enter(CUstream stream, int ptsz) {
  struct gf_gate g = {gf_compute_device(), NULL};
  if (g.d == NULL || gf_capturing(stream, ptsz)) return (struct gf_gate){NULL, NULL};
  int solo = __atomic_load_n(&g.d->lease.solo, __ATOMIC_RELAXED);
  uint64_t now = solo ? coarse_ns() : gf_now_ns();
  if (GF_UNLIKELY(__atomic_load_n(&g.d->state, __ATOMIC_ACQUIRE) == GF_DEV_BYPASS) && !bypass_retry(g.d, now))
    return (struct gf_gate){NULL, NULL};
  g.s = gf_stream_of(&g.d->streams, stream, ptsz);
  if (GF_LIKELY(gf_lease_admits(&g.d->lease, now) && gf_stream_room(g.s, budget_ns(g.d, solo), solo))) {
    touch(g.d, g.s, solo, now);
  } else {
    if (!gate_slow(g.d, g.s, stream, ptsz)) return (struct gf_gate){NULL, NULL};
    now = gf_now_ns(); /* after the wait */
  }
  t_from = now;
  if (GF_UNLIKELY(g.d->blocking)) { /* the kernel runs inside the call: a wait for its own work */
    wait_begin(g.d, __atomic_load_n(&g.s->call_ns, __ATOMIC_RELAXED));
    t_from = gf_now_ns();
  }
  return g;
}

void gf_gate_exit(struct gf_gate g, CUresult rc, CUstream stream, int ptsz) {
  if (g.s == NULL) return;
  int solo = __atomic_load_n(&g.d->lease.solo, __ATOMIC_RELAXED);
  uint64_t now = 0;                 /* solo: no clock read here (nobody waits on a solo holder's calls) */
  if (GF_UNLIKELY(g.d->blocking)) { /* the kernel ran inside the call: its duration, busy ends */
    now = gf_now_ns();
    if (rc == CUDA_SUCCESS) gf_stream_called(g.s, now - t_from);
    wait_end(g.d);
  } else if (!solo && rc == CUDA_SUCCESS) {
    gf_call_returned(&g.d->lease, t_from, now = gf_now_ns());
  }
  if (rc != CUDA_SUCCESS) return;
  gf_stream_launched(g.s, stream, ptsz, budget_ns(g.d, solo), solo, now);
}

struct gf_compute_dev* gf_sync_begin(void) {
  struct gf_compute_dev* d = gf_compute_device();
  if (d == NULL || __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != GF_DEV_GATED) return NULL;
  wait_begin(d, GF_NO_CALL);
  return d;
}

void gf_sync_end(struct gf_compute_dev* d, CUresult rc, CUstream stream, int ptsz, enum gf_synced what) {
  if (d == NULL) return;
  wait_end(d);
  if (rc != CUDA_SUCCESS || what == GF_SYNCED_EVENT) return;
  gf_streams_synced(&d->streams, what == GF_SYNCED_ALL ? NULL : gf_stream_of(&d->streams, stream, ptsz));
}
