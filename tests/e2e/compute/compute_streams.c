/* compute_load's modes with more than one stream: overlap of a long kernel with short ones on
 * another stream, and a capture left open on a scratch stream. */
#include <stdio.h>

#include "compute_load.h"

#define OVERLAP_SHORT 200 /* kernels of 100 us: as long as the 20 ms one */

static CUresult kernel_of(const char* name, CUfunction* f) {
  CUmodule mod;
  CUresult rc = cuModuleLoadData(&mod, "fake");
  return rc == CUDA_SUCCESS ? cuModuleGetFunction(f, mod, name) : rc;
}

#define OVERLAP_SLOW_NS 10000000ull /* a short launch that waited this long waited for the long kernel */

/* One round: the long kernel on g's stream, the short ones on s2 (each launch call timed). */
static CUresult round_of(struct load* g, CUstream s2, CUfunction lng, CUfunction shrt, uint64_t* max_wait,
                         unsigned* slow) {
  CUresult rc = cuLaunchKernel(lng, 1, 1, 1, 1, 1, 1, 0, g->stream, NULL, NULL);
  for (int i = 0; i < OVERLAP_SHORT && rc == CUDA_SUCCESS; i++) {
    uint64_t t0 = load_now_ns();
    rc = cuLaunchKernel(shrt, 1, 1, 1, 1, 1, 1, 0, s2, NULL, NULL);
    uint64_t d = load_now_ns() - t0;
    if (d > *max_wait) *max_wait = d;
    *slow += d >= OVERLAP_SLOW_NS;
  }
  if (rc == CUDA_SUCCESS) rc = cuStreamSynchronize(s2);
  if (rc == CUDA_SUCCESS) rc = cuStreamSynchronize(g->stream);
  return rc;
}

int load_overlap(struct load* g, const char* phase) {
  unsigned rounds = 0;
  if (sscanf(phase, "overlap:%u", &rounds) != 1) return 1;
  CUstream s2;
  CUfunction lng, shrt;
  CUresult rc = cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS) rc = kernel_of("sleep_20ms", &lng);
  if (rc == CUDA_SUCCESS) rc = kernel_of("sleep_100us", &shrt);
  uint64_t max_wait = 0, t0 = load_now_ns();
  unsigned slow = 0;
  for (unsigned i = 0; i < rounds && rc == CUDA_SUCCESS; i++) rc = round_of(g, s2, lng, shrt, &max_wait, &slow);
  printf("overlap rounds=%u wall_ms=%.1f max_wait_us=%llu slow=%u rc=%d\n", rounds, (double)(load_now_ns() - t0) / 1e6,
         (unsigned long long)(max_wait / 1000), slow, (int)rc);
  fflush(stdout);
  return rc != CUDA_SUCCESS;
}

CUresult load_capture_open(CUstream* scratch) {
  CUfunction f;
  CUresult rc = cuStreamCreate(scratch, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS) rc = cuStreamBeginCapture(*scratch, CU_STREAM_CAPTURE_MODE_RELAXED);
  if (rc == CUDA_SUCCESS) rc = kernel_of("sleep_100us", &f);
  if (rc == CUDA_SUCCESS) rc = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, *scratch, NULL, NULL);
  return rc;
}

void load_capture_close(CUstream scratch) {
  CUgraph graph;
  if (cuStreamEndCapture(scratch, &graph) == CUDA_SUCCESS) cuGraphDestroy(graph);
}

/* One step of a two-GPU job: the kernel on each GPU (its own context and stream), then both waited
 * for, as a collective's peers meet at the end of each step. */
static CUresult tp_step(CUcontext ctx[2], CUstream st[2], CUfunction fn[2]) {
  CUresult rc = CUDA_SUCCESS;
  for (int d = 0; d < 2 && rc == CUDA_SUCCESS; d++) {
    rc = cuCtxSetCurrent(ctx[d]);
    if (rc == CUDA_SUCCESS) rc = cuLaunchKernel(fn[d], 1, 1, 1, 1, 1, 1, 0, st[d], NULL, NULL);
  }
  for (int d = 0; d < 2 && rc == CUDA_SUCCESS; d++) {
    rc = cuCtxSetCurrent(ctx[d]);
    if (rc == CUDA_SUCCESS) rc = cuStreamSynchronize(st[d]);
  }
  return rc;
}

int load_tp(struct load* g, const char* kernel, uint64_t until) {
  CUcontext ctx[2];
  CUstream st[2];
  CUfunction fn[2];
  CUresult rc = CUDA_SUCCESS;
  for (int d = 0; d < 2 && rc == CUDA_SUCCESS; d++) {
    CUdevice dev;
    rc = cuDeviceGet(&dev, d);
    if (rc == CUDA_SUCCESS) rc = cuCtxCreate(&ctx[d], 0, dev);
    if (rc == CUDA_SUCCESS) rc = cuStreamCreate(&st[d], CU_STREAM_NON_BLOCKING);
    if (rc == CUDA_SUCCESS) rc = kernel_of(kernel, &fn[d]);
  }
  unsigned long long steps = 0;
  uint64_t t0 = load_now_ns();
  while (rc == CUDA_SUCCESS && load_now_ns() < until && (rc = tp_step(ctx, st, fn)) == CUDA_SUCCESS) steps++;
  printf("tp steps=%llu seconds=%.2f rc=%d\n", steps, (double)(load_now_ns() - t0) / 1e9, (int)rc);
  fflush(stdout);
  (void)g;
  return rc != CUDA_SUCCESS;
}
