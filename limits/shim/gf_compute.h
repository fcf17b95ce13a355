/* The compute share in the shim (docs/architecture.md "Compute share", gpufrac/arbiter_abi.h):
 * the launch gate, this process's launches in flight per stream, and the synchronisation and
 * capture calls the gate needs to see. Sits above gf_shim.h (the process's configuration); nothing
 * below includes it. Internal (hidden). */
#ifndef GPUFRAC_SHIM_GF_COMPUTE_H
#define GPUFRAC_SHIM_GF_COMPUTE_H

#include <pthread.h>

#include "gf_arbiter.h"
#include "gf_shim.h"

/* ---- compute_dev.c: whether any device of the limit file is arbitrated ---- */
#define GF_COMPUTE_OFF 1 /* loaded: no arbitrated device (or no usable limit file): nothing is gated */
#define GF_COMPUTE_ON 2
extern int gf_compute_flag; /* atomic: 0 until the configuration is loaded */
int gf_compute_load(void);  /* loads the configuration; returns the flag */
/* The inert fast path: one load and one predictable branch per call. */
static inline int gf_compute_inert(void) {
  int c = __atomic_load_n(&gf_compute_flag, __ATOMIC_RELAXED);
  if (GF_LIKELY(c == GF_COMPUTE_OFF)) return 1;
  return (c != 0 ? c : gf_compute_load()) != GF_COMPUTE_ON;
}
/* A device line is arbitrated: a compute share smaller than the whole GPU. */
static inline int gf_compute_arbitrated(const struct gf_device_limit* d) {
  return d->compute_ppm != 0 && d->compute_ppm < GPUFRAC_ARBITER_WHOLE;
}

/* ---- streams.c: launches admitted and not yet known complete, per stream of one device ---- */
#define GF_STREAMS 32      /* streams tracked per device; launches on further streams share one entry */
#define GF_MARKS 128       /* events in flight per stream at most (racing threads beyond the bound) */
#define GF_GATED_MAX 64    /* launches in flight per gated stream at most, whatever their duration */
#define GF_SOLO_MAX 1024   /* the same for a solo holder (the driver's own queue is about this deep) */
#define GF_SOLO_STRIDE 128 /* a solo holder marks at most every this many launches */
struct gf_stream {
  uint64_t key;        /* atomic: the stream (legacy: 1; per-thread default: thread | 2); 0 free */
  pthread_mutex_t mu;  /* serialises marks and their retirement */
  uint64_t seq;        /* atomic: launches admitted on the stream, ever */
  uint64_t marked;     /* atomic: seq of the newest mark */
  uint64_t done;       /* atomic: seq of the newest mark known complete */
  unsigned head, tail; /* marks [head, tail) in flight (under mu) */
  uint64_t launch_ns;  /* a launch's duration as measured (moving average, under mu) */
  uint64_t bound_d[2]; /* atomic: the launch_ns (| 1 << 63) bound[] was computed for, gated and solo */
  unsigned bound[2];   /* atomic: K, gated and solo */
  uint64_t last_done;  /* when the last mark waited for completed; 0 after a retirement by query */
  uint64_t call_ns;    /* atomic: a launch call's duration as measured (moving average), when blocking */
  CUevent ev[GF_MARKS];
  uint64_t at_seq[GF_MARKS]; /* each mark's seq */
  uint64_t at_ns[GF_MARKS];  /* when each was recorded */
};
struct gf_streams {
  struct gf_stream s[GF_STREAMS + 1]; /* the last: every stream the table has no room for */
};
/* The entry of a launch's stream (claimed on first use). */
struct gf_stream* gf_stream_of(struct gf_streams* t, CUstream stream, int ptsz);
/* Room for one more launch: fewer than K in flight after retiring completed marks (queried only at
 * K). budget_ns: the work in flight allowed (inflight_us gated, a lease solo). */
int gf_stream_room(struct gf_stream* s, uint64_t budget_ns, int solo);
/* After the driver took a launch on stream (the _ptsz form's when ptsz): counts it; records a mark
 * when the stride says (gated: every launch) at now_ns (0: read then). An event that cannot be
 * recorded leaves it unmarked. */
void gf_stream_launched(struct gf_stream* s, CUstream stream, int ptsz, uint64_t budget_ns, int solo, uint64_t now_ns);
/* A launch call on s that ran its kernel inside it (CUDA_LAUNCH_BLOCKING=1) took call_ns: the
 * stream's measured call duration (call_ns below) follows it. */
void gf_stream_called(struct gf_stream* s, uint64_t call_ns);
/* Waits for the oldest mark of s (measuring the launches' duration) and retires it; launches left
 * unmarked are marked on stream first. */
void gf_stream_wait_oldest(struct gf_stream* s, CUstream stream, int ptsz);
/* Waits for every mark of every stream (a drain), calling tick(arg) before each wait. */
void gf_streams_drain(struct gf_streams* t, void (*tick)(void*), void* arg);
/* What the launches in flight on every stream still take, as estimated (ns; unknown_ns for a
 * launch of a stream not measured yet). */
uint64_t gf_streams_pending_ns(struct gf_streams* t, uint64_t unknown_ns);
/* A synchronise returned: every mark of s (NULL: of every stream) is complete (measured). */
void gf_streams_synced(struct gf_streams* t, struct gf_stream* s);
/* Fork child: forgets every stream (events of the parent's contexts are not the child's). */
void gf_streams_forget(struct gf_streams* t);

/* ---- capture.c: captures in this process ---- */
/* After cuStreamBeginCapture / cuStreamEndCapture on stream (while none is open, nothing asks). */
void gf_capture_begin(CUresult rc, CUstream stream, int ptsz);
void gf_capture_end(CUresult rc, CUstream stream, int ptsz);
/* The launch's stream captures (asked of the driver only while a capture is open). */
int gf_capturing(CUstream stream, int ptsz);
void gf_capture_after_fork(void);

/* ---- compute_dev.c, gate.c: the launch gate ---- */
#define GF_DEV_UNSET 0
#define GF_DEV_GATED 1
#define GF_DEV_PASS 2   /* not arbitrated: no share, or an unusable arbiter */
#define GF_DEV_BYPASS 3 /* waited past its bound: ungated until it claims the lease again */
struct gf_compute_dev {
  int state;   /* atomic: GF_DEV_* */
  int waiting; /* atomic: threads of this process waiting for its GPU work (gate, synchronise) */
  pthread_mutex_t mu;
  struct gf_arb map;
  struct gf_lease lease;
  struct gf_streams streams;
  unsigned index;      /* the limit file's device index */
  uint64_t touched_ns; /* atomic: the last active_ns this process stored */
  uint64_t retry_ns;   /* atomic: bypassing: when to try to claim the lease again */
  int retrying;        /* atomic: a thread tries now */
  uint64_t wait_from;  /* when the first waiter began */
  int wait_held;       /* and whether the process held the lease then */
  int probation;       /* under mu: gated again after a bypass, and no lease of its own ended since */
  int blocking;        /* CUDA_LAUNCH_BLOCKING=1 at setup: every launch runs its kernel inside the call */
  int shrunk;          /* atomic: 1 the lease file was cut short under the mapping (SIGBUS), 2 said so */
  int logged, logged_bypass;
};
/* The calling thread's device when it is gated or bypassing; NULL otherwise. Sets it up on first use
 * (maps the arbiter; an unusable one is said once and not arbitrated). */
struct gf_compute_dev* gf_compute_device(void);
/* Waiting past its bound: says so once, reports it in the container's usage region, runs ungated. */
void gf_compute_bypass(struct gf_compute_dev* d);
/* The slot is gone: gives the lease up and stops arbitrating (said once). */
void gf_compute_disable(struct gf_compute_dev* d);

/* Before a launch on stream: waits until this process may launch on the calling thread's device.
 * Returns what to pass to gf_gate_exit; s is NULL when the launch is not gated (a device without a
 * compute share, an unusable arbiter, a capturing stream, a bypass). A launch that runs its kernel
 * inside the call (CUDA_LAUNCH_BLOCKING=1) is a wait for the holder's own work: busy from here to
 * gf_gate_exit, announcing the call's measured duration, and its time past a takeover is debt. */
struct gf_gate {
  struct gf_compute_dev* d;
  struct gf_stream* s;
};
struct gf_gate gf_gate_enter(CUstream stream, int ptsz);
/* After the launch: counts it in flight when the driver took it. A gated launch call that lasted past
 * idle_us (its GPU work hidden inside it: a full queue) charges its time as debt when the lease was
 * taken over meanwhile. */
void gf_gate_exit(struct gf_gate g, CUresult rc, CUstream stream, int ptsz);
/* Around a synchronise call: the holder waits for its own work, it is not idle; its work past a
 * lease lost meanwhile is its debt. After it, what completed: the stream's, everything, or unknown. */
enum gf_synced { GF_SYNCED_EVENT = 0, GF_SYNCED_STREAM = 1, GF_SYNCED_ALL = 2 };
struct gf_compute_dev* gf_sync_begin(void);
void gf_sync_end(struct gf_compute_dev* d, CUresult rc, CUstream stream, int ptsz, enum gf_synced what);
void gf_compute_after_fork(void);

#endif /* GPUFRAC_SHIM_GF_COMPUTE_H */
