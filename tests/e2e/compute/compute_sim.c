/* compute_load's checks of the simulated GPU's streams and driver costs (fake_gpu_test.sh). Times
 * printed are simulated ones (gpufracFakeEventTime), from a gate all streams wait for, so they are
 * exact whatever the host's load. */
#include <stdio.h>
#include <string.h>

#include "compute_load.h"

struct kernels {
  CUfunction gate, k20ms, k10ms, k5ms, k1ms, k100us, noop;
};

static CUresult load_kernels(struct kernels* k) {
  CUmodule mod;
  CUresult rc = cuModuleLoadData(&mod, "fake");
  const char* names[] = {"sleep_50ms", "sleep_20ms", "sleep_10ms", "sleep_5ms", "sleep_1ms", "sleep_100us", "noop"};
  CUfunction* out[] = {&k->gate, &k->k20ms, &k->k10ms, &k->k5ms, &k->k1ms, &k->k100us, &k->noop};
  for (int i = 0; i < 7 && rc == CUDA_SUCCESS; i++) rc = cuModuleGetFunction(out[i], mod, names[i]);
  return rc;
}

static CUresult go(CUfunction f, CUstream s) {
  return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
}

/* ms from event a to event b, both complete; -1 on error. */
static double ms_between(CUevent a, CUevent b) {
  uint64_t ta = 0, tb = 0;
  if (cuEventSynchronize(b) != CUDA_SUCCESS || gpufracFakeEventTime(a, &ta) != CUDA_SUCCESS ||
      gpufracFakeEventTime(b, &tb) != CUDA_SUCCESS)
    return -1;
  return (double)(int64_t)(tb - ta) / 1e6;
}

/* A 50 ms gate on its own stream, then every stream in waiters[] waits for it (NULL: legacy). */
static CUresult gate(struct kernels* k, CUstream g, CUevent done, CUstream* waiters, int n) {
  CUresult rc = go(k->gate, g);
  if (rc == CUDA_SUCCESS) rc = cuEventRecord(done, g);
  for (int i = 0; i < n && rc == CUDA_SUCCESS; i++) rc = cuStreamWaitEvent(waiters[i], done, 0);
  return rc;
}

/* A 20 ms kernel on stream a beside 100 kernels of 100 us on stream b: each stream's work ends
 * as if alone. "streams a_ms=<ms> b_ms=<ms> span_ms=<ms> rc=<rc>" */
static int overlap(struct kernels* k, CUstream g, CUstream a, CUstream b, CUevent* ev) {
  CUstream w[] = {a, b};
  CUresult rc = gate(k, g, ev[0], w, 2);
  if (rc == CUDA_SUCCESS) rc = go(k->k20ms, a);
  for (int i = 0; i < 100 && rc == CUDA_SUCCESS; i++) rc = go(k->k100us, b);
  if (rc == CUDA_SUCCESS) rc = cuEventRecord(ev[1], a);
  if (rc == CUDA_SUCCESS) rc = cuEventRecord(ev[2], b);
  double ma = rc == CUDA_SUCCESS ? ms_between(ev[0], ev[1]) : -1,
         mb = rc == CUDA_SUCCESS ? ms_between(ev[0], ev[2]) : -1;
  printf("streams a_ms=%.3f b_ms=%.3f span_ms=%.3f rc=%d\n", ma, mb, ma > mb ? ma : mb, (int)rc);
  return rc != CUDA_SUCCESS;
}

/* After a gate: first on stream s1, then on s2; the ms until s2's work is done. */
static double after(struct kernels* k, CUstream g, CUevent* ev, CUstream s1, CUfunction f1, CUstream s2, CUfunction f2,
                    int ptsz) {
  CUstream w[] = {s1, s2};
  if (gate(k, g, ev[0], w, ptsz ? 1 : 2) != CUDA_SUCCESS ||
      (ptsz && cuStreamWaitEvent_ptsz(NULL, ev[0], 0) != CUDA_SUCCESS) || go(f1, s1) != CUDA_SUCCESS)
    return -1;
  CUresult rc = ptsz ? cuLaunchKernel_ptsz(f2, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) : go(f2, s2);
  if (rc == CUDA_SUCCESS) rc = ptsz ? cuEventRecord_ptsz(ev[1], NULL) : cuEventRecord(ev[1], s2);
  double ms = rc == CUDA_SUCCESS ? ms_between(ev[0], ev[1]) : -1;
  return cuCtxSynchronize() == CUDA_SUCCESS ? ms : -1;
}

/* The legacy stream waits for blocking streams and they for it; non-blocking streams for neither.
 * "legacy after_blocking_ms=.. after_nonblocking_ms=.. blocking_after=.. nonblocking_after=..
 *  per_thread_after=.." */
static int legacy(struct kernels* k, CUstream g, CUstream blocking, CUstream nonblocking, CUevent* ev) {
  double r[5] = {
      after(k, g, ev, blocking, k->k10ms, NULL, k->k1ms, 0), after(k, g, ev, nonblocking, k->k10ms, NULL, k->k1ms, 0),
      after(k, g, ev, NULL, k->k5ms, blocking, k->k1ms, 0),  after(k, g, ev, NULL, k->k5ms, nonblocking, k->k1ms, 0),
      after(k, g, ev, NULL, k->k5ms, NULL, k->k1ms, 1),
  };
  printf(
      "legacy after_blocking_ms=%.3f after_nonblocking_ms=%.3f blocking_after_ms=%.3f nonblocking_after_ms=%.3f "
      "per_thread_after_ms=%.3f\n",
      r[0], r[1], r[2], r[3], r[4]);
  return r[0] < 0 || r[1] < 0 || r[2] < 0 || r[3] < 0 || r[4] < 0;
}

int load_streams(void) {
  struct kernels k;
  CUstream g, a, b, blocking;
  CUevent ev[3];
  CUresult rc = load_kernels(&k);
  if (rc == CUDA_SUCCESS) rc = cuStreamCreate(&g, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS) rc = cuStreamCreate(&a, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS) rc = cuStreamCreate(&b, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS) rc = cuStreamCreate(&blocking, 0);
  for (int i = 0; i < 3 && rc == CUDA_SUCCESS; i++) rc = cuEventCreate(&ev[i], CU_EVENT_DEFAULT);
  if (rc != CUDA_SUCCESS) return printf("streams setup rc=%d\n", (int)rc), 1;
  return overlap(&k, g, a, b, ev) | legacy(&k, g, blocking, a, ev);
}

/* N calls of each costed kind: "cost <kind> calls=<n> cost_ns=<ns> spun=<1 if each spun its cost>" */
int load_cost(struct load* g, unsigned n) {
  static const char* const kNames[] = {"launch", "record", "query", "sync"};
  struct kernels k;
  CUevent ev;
  uint64_t calls[4], spun[4], cost[4];
  if (load_kernels(&k) != CUDA_SUCCESS || cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return 1;
  for (unsigned kind = 0; kind < 4; kind++) gpufracFakeCost(kind, &calls[kind], &spun[kind], &cost[kind]);
  for (unsigned i = 0; i < n; i++) {
    if (go(k.noop, g->stream) != CUDA_SUCCESS || cuEventRecord(ev, g->stream) != CUDA_SUCCESS ||
        cuEventQuery(ev) != CUDA_SUCCESS || cuStreamSynchronize(g->stream) != CUDA_SUCCESS)
      return 1;
  }
  for (unsigned kind = 0; kind < 4; kind++) {
    uint64_t c, s, ns;
    gpufracFakeCost(kind, &c, &s, &ns);
    printf("cost %s calls=%llu cost_ns=%llu spun=%d\n", kNames[kind], (unsigned long long)(c - calls[kind]),
           (unsigned long long)ns, s - spun[kind] >= (c - calls[kind]) * ns);
  }
  return 0;
}

/* ns per call of f, best of 5 loops of n. */
static double best_ns(unsigned n, int (*f)(struct load*, struct kernels*), struct load* g, struct kernels* k) {
  double best = 1e30;
  for (int run = 0; run < 5; run++) {
    uint64_t t0 = load_now_ns();
    for (unsigned i = 0; i < n; i++)
      if (f(g, k) != 0) return -1;
    double ns = (double)(load_now_ns() - t0) / n;
    if (ns < best) best = ns;
  }
  return best;
}

static int clock_read(struct load* g, struct kernels* k) {
  (void)g, (void)k;
  return load_now_ns() == 0;
}
static int query(struct load* g, struct kernels* k) {
  (void)k;
  return cuStreamQuery(g->stream) != CUDA_SUCCESS;
}
static int launch_noop(struct load* g, struct kernels* k) {
  return go(k->noop, g->stream) != CUDA_SUCCESS;
}

/* What the simulated GPU itself costs a caller: "qbench clock_ns=.. query_ns=.. launch_ns=.." */
int load_qbench(struct load* g, unsigned n) {
  struct kernels k;
  if (load_kernels(&k) != CUDA_SUCCESS || cuStreamSynchronize(g->stream) != CUDA_SUCCESS) return 1;
  double c = best_ns(n, clock_read, g, &k), q = best_ns(n, query, g, &k), l = best_ns(n, launch_noop, g, &k);
  printf("qbench clock_ns=%.1f query_ns=%.1f launch_ns=%.1f\n", c, q, l);
  return c < 0 || q < 0 || l < 0;
}
