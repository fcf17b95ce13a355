/* The launch gate (docs/architecture.md "Compute share"): per device, the arbiter mapped on first
 * use and this process's lease (lease.c, lease_hold.c). A launch passes at once while the process
 * holds the lease and has room in flight (gf_lease_admits, one clock read); otherwise one thread
 * at a time ends, drains, renews or acquires the lease under a process-local mutex (no lock is
 * shared with another process). A device whose arbiter is unusable is not arbitrated, said once. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gf_compute.h"
#include "gf_table.h"

#define GF_DEV_UNSET 0
#define GF_DEV_GATED 1
#define GF_DEV_PASS 2

struct gf_compute_dev {
  int state;   /* atomic: GF_DEV_* */
  int waiting; /* atomic: threads of this process waiting for its GPU work (gate, synchronise) */
  pthread_mutex_t mu;
  struct gf_lease lease;
  struct gf_flight flight;
  const char* uuid; /* the limit file's */
  int logged;
};

static struct gf_compute_dev g_dev[GPUFRAC_MAX_DEVICES];
static pthread_mutex_t g_setup_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gf_table g_capturing; /* streams of this process that capture */
static int g_captures;              /* atomic: their number */
static __thread uint64_t t_admitted __attribute__((tls_model("initial-exec"))); /* this thread's last admission */

/* <directory of the region>/compute/<uuid>: GPUFRAC_CONTAINER_COMPUTE in a container. */
static void arbiter_path(char* out, size_t len, const char* uuid) {
  const char* region = gf_g.cfg.region;
  const char* slash = strrchr(region, '/');
  int dir = slash != NULL ? (int)(slash - region) : 0;
  snprintf(out, len, "%.*s/compute/%s", dir, region, uuid);
}

/* 0: arbitrated; -1: not (no compute line, or unusable: said once). */
static int open_arbiter(struct gf_compute_dev* d, const struct gf_device_limit* dl) {
  char path[GF_PATH_MAX + 128], err[512];
  d->uuid = dl->uuid;
  if (dl->compute_ppm == 0) return -1;
  if (dl->compute_token == 0) {
    gf_log_once(&d->logged,
                "limit file %s: compute share on %s without an arbiter line; launches on %s are not "
                "arbitrated",
                gf_g.limit_path, dl->uuid, dl->uuid);
    return -1;
  }
  arbiter_path(path, sizeof path, dl->uuid);
  struct gpufrac_arbiter* a = gf_arbiter_map(path, err, sizeof err);
  if (a != NULL && gf_lease_init(&d->lease, a, dl->compute_token, dl->compute_ppm, dl->compute_strict,
                                 dl->priority_high, (uint32_t)getpid(), err, sizeof err) == 0) {
    pthread_mutex_init(&d->mu, NULL);
    gf_flight_init(&d->flight, (uint64_t)d->lease.p.inflight_us * 1000);
    return 0;
  }
  if (a != NULL) munmap(a, sizeof *a);
  gf_log_once(&d->logged, "compute arbiter %s: %s; launches on %s are not arbitrated", path, err, dl->uuid);
  return -1;
}

static int setup(unsigned idx) {
  struct gf_compute_dev* d = &g_dev[idx];
  pthread_mutex_lock(&g_setup_mu);
  int st = __atomic_load_n(&d->state, __ATOMIC_ACQUIRE);
  if (st == GF_DEV_UNSET) {
    st = open_arbiter(d, &gf_g.cfg.devices[idx]) == 0 ? GF_DEV_GATED : GF_DEV_PASS;
    __atomic_store_n(&d->state, st, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_setup_mu);
  return st;
}

/* The device of the calling thread's context when it is arbitrated, else NULL. */
static struct gf_compute_dev* gated_device(void) {
  CUresult err;
  int idx = gf_current_index(&err);
  if (idx < 0 || idx >= (int)gf_g.cfg.device_count) return NULL;
  struct gf_compute_dev* d = &g_dev[idx];
  int st = __atomic_load_n(&d->state, __ATOMIC_ACQUIRE);
  if (GF_UNLIKELY(st == GF_DEV_UNSET)) st = setup((unsigned)idx);
  return st == GF_DEV_GATED ? d : NULL;
}

/* The holder waits for its own GPU work: not idle (counted, several threads may wait). */
static void wait_begin(struct gf_compute_dev* d) {
  if (__atomic_fetch_add(&d->waiting, 1, __ATOMIC_SEQ_CST) == 0) gf_lease_busy(&d->lease, 1);
}
static void wait_end(struct gf_compute_dev* d) {
  if (__atomic_fetch_sub(&d->waiting, 1, __ATOMIC_SEQ_CST) == 1) gf_lease_busy(&d->lease, 0);
}

/* gf_lease_end's drain: every launch in flight completes; the lease stays held meanwhile. */
static void drain(void* arg) {
  struct gf_compute_dev* d = arg;
  wait_begin(d);
  while (gf_flight_count(&d->flight) > 0) {
    gf_lease_extend(&d->lease, gf_now_ns());
    gf_flight_wait_oldest(&d->flight);
  }
  wait_end(d);
}

static void disable(struct gf_compute_dev* d) {
  gf_lease_drop(&d->lease);
  __atomic_store_n(&d->state, GF_DEV_PASS, __ATOMIC_RELEASE);
  gf_log_once(&d->logged, "compute arbiter of %s: this container's slot is gone; launches on %s are not arbitrated",
              d->uuid, d->uuid);
}

/* 1 when admitted, 0 when the device stopped being arbitrated. */
static int gate_slow(struct gf_compute_dev* d) {
  struct gf_lease* l = &d->lease;
  int admitted = 0;
  pthread_mutex_lock(&d->mu);
  while (!admitted && __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == GF_DEV_GATED) {
    uint64_t now = gf_now_ns();
    enum gf_lease_state s = gf_lease_state(l, now);
    if (s == GF_LEASE_HOLD && gf_flight_room(&d->flight)) {
      gf_lease_touch(l, now);
      admitted = 1;
    } else if (s == GF_LEASE_HOLD) {
      wait_begin(d);
      gf_flight_wait_oldest(&d->flight);
      wait_end(d);
    } else if (s == GF_LEASE_END) {
      gf_lease_end(l, drain, d);
    } else if (gf_lease_acquire(l) != 0) {
      disable(d);
    }
  }
  pthread_mutex_unlock(&d->mu);
  return admitted;
}

struct gf_compute_dev* gf_gate_enter(void) {
  if (__atomic_load_n(&g_captures, __ATOMIC_RELAXED) != 0) return NULL;
  struct gf_compute_dev* d = gated_device();
  if (d == NULL) return NULL;
  uint64_t now = gf_now_ns();
  if (GF_LIKELY(gf_lease_admits(&d->lease, now) && gf_flight_room(&d->flight))) {
    gf_lease_touch(&d->lease, now);
    t_admitted = now;
    return d;
  }
  if (!gate_slow(d)) return NULL;
  t_admitted = gf_now_ns();
  return d;
}

void gf_gate_exit(struct gf_compute_dev* d, CUresult rc, CUstream stream, int ptsz) {
  if (d != NULL && rc == CUDA_SUCCESS) gf_flight_push(&d->flight, stream, ptsz, t_admitted);
}

struct gf_compute_dev* gf_sync_begin(void) {
  struct gf_compute_dev* d = gated_device();
  if (d != NULL) wait_begin(d);
  return d;
}

void gf_sync_end(struct gf_compute_dev* d) {
  if (d != NULL) wait_end(d);
}

/* A capturing stream's key: the handle, or the thread for its per-thread default stream. */
static uint64_t capture_key(CUstream stream, int ptsz) {
  int own = (stream == NULL && ptsz) || stream == (CUstream)0x2; /* CU_STREAM_PER_THREAD */
  return own ? (uint64_t)pthread_self() | 1u : (uint64_t)(uintptr_t)stream;
}

void gf_capture_begin(CUresult rc, CUstream stream, int ptsz) {
  if (rc == CUDA_SUCCESS && gf_table_insert(&g_capturing, capture_key(stream, ptsz), 1) == 0)
    __atomic_fetch_add(&g_captures, 1, __ATOMIC_SEQ_CST);
}

void gf_capture_end(CUresult rc, CUstream stream, int ptsz) {
  uint64_t v;
  (void)rc; /* ended either way, unless the stream was not capturing (then it is not in the table) */
  if (gf_table_remove(&g_capturing, capture_key(stream, ptsz), &v))
    __atomic_fetch_sub(&g_captures, 1, __ATOMIC_SEQ_CST);
}

/* The child has no lease and no launches of its own yet; it maps the arbiters again on use. */
void gf_compute_after_fork(void) {
  pthread_mutex_init(&g_setup_mu, NULL);
  for (int i = 0; i < GPUFRAC_MAX_DEVICES; i++) {
    struct gf_compute_dev* d = &g_dev[i];
    if (d->state == GF_DEV_GATED) munmap(d->lease.arb, sizeof *d->lease.arb);
    memset(d, 0, sizeof *d);
  }
  gf_table_forget(&g_capturing);
  g_captures = 0;
}
