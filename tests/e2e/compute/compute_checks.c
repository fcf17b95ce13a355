/* compute_load's checks of the simulated GPU itself (tests/e2e/compute/fake_gpu_test.sh). */
#include <stdio.h>
#include <string.h>

#include "compute_load.h"

/* A long kernel, then an event and three kernels queued behind it, then another event: the events
 * complete exactly three kernels apart. "elapsed ms=<ms> rc=<rc>" */
static int elapsed(struct load* g, CUfunction slow) {
  CUevent a, b;
  float ms = -1;
  CUresult rc = cuEventCreate(&a, CU_EVENT_DEFAULT);
  if (rc == CUDA_SUCCESS) rc = cuEventCreate(&b, CU_EVENT_DEFAULT);
  if (rc == CUDA_SUCCESS) rc = cuLaunchKernel(slow, 1, 1, 1, 1, 1, 1, 0, g->stream, NULL, NULL);
  if (rc == CUDA_SUCCESS) rc = cuEventRecord(a, g->stream);
  for (int i = 0; i < 3 && rc == CUDA_SUCCESS; i++)
    rc = cuLaunchKernel(g->fn, 1, 1, 1, 1, 1, 1, 0, g->stream, NULL, NULL);
  if (rc == CUDA_SUCCESS) rc = cuEventRecord(b, g->stream);
  CUresult early = rc == CUDA_SUCCESS ? cuEventQuery(b) : rc;
  if (rc == CUDA_SUCCESS) rc = cuEventSynchronize(b);
  if (rc == CUDA_SUCCESS) rc = cuEventElapsedTime(&ms, a, b);
  printf("elapsed ms=%.3f early=%d rc=%d\n", ms, (int)early, (int)rc);
  return rc != CUDA_SUCCESS;
}

/* N launches without waiting: how long the launching took. "burst n=N launch_ms=<ms>" */
static int burst(struct load* g, unsigned n) {
  uint64_t t0 = load_now_ns();
  for (unsigned i = 0; i < n; i++) {
    if (cuLaunchKernel(g->fn, 1, 1, 1, 1, 1, 1, 0, g->stream, NULL, NULL) != CUDA_SUCCESS) return 1;
  }
  printf("burst n=%u launch_ms=%llu\n", n, (unsigned long long)((load_now_ns() - t0) / 1000000));
  return cuStreamSynchronize(g->stream) != CUDA_SUCCESS;
}

/* Launches while the stream captures do not run: "capture status=<during> after=<after> rc=<rc>" */
static int capture(struct load* g) {
  CUgraph graph;
  CUstreamCaptureStatus during = CU_STREAM_CAPTURE_STATUS_NONE, after = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  CUresult rc = cuStreamBeginCapture(g->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
  if (rc == CUDA_SUCCESS) rc = cuLaunchKernel(g->fn, 1, 1, 1, 1, 1, 1, 0, g->stream, NULL, NULL);
  if (rc == CUDA_SUCCESS) rc = cuStreamIsCapturing(g->stream, &during);
  CUresult sync = cuStreamSynchronize(g->stream);
  if (rc == CUDA_SUCCESS) rc = cuStreamEndCapture(g->stream, &graph);
  if (rc == CUDA_SUCCESS) rc = cuStreamIsCapturing(g->stream, &after);
  printf("capture status=%d after=%d sync=%d rc=%d\n", (int)during, (int)after, (int)sync, (int)rc);
  return rc != CUDA_SUCCESS;
}

int load_check(struct load* g, const char* phase) {
  unsigned n = 0;
  if (strcmp(phase, "capture") == 0) return capture(g);
  if (sscanf(phase, "burst:%u", &n) == 1) return burst(g, n);
  CUmodule mod;
  CUfunction slow;
  if (cuModuleLoadData(&mod, "fake") != CUDA_SUCCESS || cuModuleGetFunction(&slow, mod, "sleep_100ms") != CUDA_SUCCESS)
    return 1;
  return elapsed(g, slow);
}
