/* The compute share in the shim (docs/architecture.md "Compute share", gpufrac/arbiter_abi.h):
 * the launch gate, this process's launches in flight, and the synchronisation and capture calls
 * the gate needs to see. Internal (hidden). */
#ifndef GPUFRAC_SHIM_GF_COMPUTE_H
#define GPUFRAC_SHIM_GF_COMPUTE_H

#include <pthread.h>

#include "gf_arbiter.h"
#include "gf_shim.h"

/* ---- state.c: whether any device of the limit file has a compute line ---- */
#define GF_COMPUTE_OFF 1 /* loaded: no compute line (or no usable limit file): nothing is gated */
#define GF_COMPUTE_ON 2
extern int gf_compute_flag; /* atomic: 0 until the configuration is loaded */
int gf_compute_load(void);  /* loads the configuration; returns the flag */
/* The inert fast path: one load and one predictable branch per call. */
static inline int gf_compute_inert(void) {
  int c = __atomic_load_n(&gf_compute_flag, __ATOMIC_RELAXED);
  if (GF_LIKELY(c == GF_COMPUTE_OFF)) return 1;
  return (c != 0 ? c : gf_compute_load()) != GF_COMPUTE_ON;
}

/* ---- flight.c: launches admitted and not yet known complete (one ring per device) ---- */
#define GF_FLIGHT_MAX 64   /* launches in flight at most, whatever their duration */
#define GF_FLIGHT_RING 128 /* room for launches admitted by racing threads beyond the bound */
struct gf_flight {
  pthread_mutex_t mu;
  unsigned head, tail; /* atomic: tail - head launches in flight */
  unsigned bound;      /* atomic: K = budget / launch_ns + 1 (arbiter_abi.h, "Admission") */
  uint64_t budget_ns;  /* inflight_us */
  uint64_t launch_ns;  /* a launch's duration, as measured (moving average) */
  uint64_t last_done;  /* when the last launch waited for completed; 0 after a retirement by query */
  CUevent ev[GF_FLIGHT_RING];
  uint64_t admitted[GF_FLIGHT_RING]; /* when each was admitted */
};
void gf_flight_init(struct gf_flight* f, uint64_t budget_ns);
static inline unsigned gf_flight_count(const struct gf_flight* f) {
  return __atomic_load_n(&f->tail, __ATOMIC_ACQUIRE) - __atomic_load_n(&f->head, __ATOMIC_ACQUIRE);
}
/* Fewer than K in flight, after retiring the completed oldest ones (queried only at K). */
int gf_flight_room(struct gf_flight* f);
/* Records an event after a launch admitted at admitted_ns on stream (ptsz: the _ptsz form's
 * stream). An event that cannot be recorded leaves the launch uncounted. */
void gf_flight_push(struct gf_flight* f, CUstream stream, int ptsz, uint64_t admitted_ns);
/* Waits for the oldest launch in flight and retires it (nothing when none); the wait measures
 * the launches' duration. */
void gf_flight_wait_oldest(struct gf_flight* f);

/* ---- gate.c: the launch gate ---- */
struct gf_compute_dev;
/* Before a launch: waits until this process may launch on the calling thread's device. Returns
 * the device to pass to gf_gate_exit, or NULL when the launch is not gated (a device without a
 * compute share, an unusable arbiter, a capturing stream in the process). */
struct gf_compute_dev* gf_gate_enter(void);
/* After the launch: counts it in flight when the driver took it. */
void gf_gate_exit(struct gf_compute_dev* d, CUresult rc, CUstream stream, int ptsz);
/* Around a synchronise call: the holder waits for its own work, it is not idle. */
struct gf_compute_dev* gf_sync_begin(void);
void gf_sync_end(struct gf_compute_dev* d);
/* After cuStreamBeginCapture / cuStreamEndCapture: while any stream of the process captures,
 * launches are not gated (the gate's event calls would join the capture or break it). */
void gf_capture_begin(CUresult rc, CUstream stream, int ptsz);
void gf_capture_end(CUresult rc, CUstream stream, int ptsz);
void gf_compute_after_fork(void);

#endif /* GPUFRAC_SHIM_GF_COMPUTE_H */
