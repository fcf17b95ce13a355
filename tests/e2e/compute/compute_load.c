/* GPU work for the compute-share tests, over the fake libcuda.so.1's simulated GPU (linked with
 * -lcuda; tests/fakes/cuda/README.md). Device 0 (or -d N), one created stream.
 *   compute_load [-d N] [-k KERNEL] [--at T0] [--mps PERCENT] PHASE...
 * KERNEL is a kernel name (default sleep_500us: 500 us on the simulated GPU; sleep_500us_w20: of
 * width 20 % of the SMs). --mps: an MPS client with that SM percent (test-only gpufracFakeMpsClient). Each PHASE is
 * MODE:SECONDS and runs MODE that long (SECONDS 0: until killed); with --at T0 (CLOCK_MONOTONIC ns)
 * phase i runs from T0 + the earlier phases' seconds, so processes started apart switch together.
 * Modes, each a loop of launches:
 *   async      cuLaunchKernel, never waiting (the driver's queue bounds it)
 *   sync       cuLaunchKernel then cuStreamSynchronize, every time
 *   graph      cuGraphLaunch of a graph captured once from 4 launches
 *   coop       cuLaunchCooperativeKernel          ex      cuLaunchKernelEx
 *   ptsz       cuLaunchKernel_ptsz on the per-thread default stream
 *   procaddr   cuLaunchKernel found with cuGetProcAddress
 *   dlsym      cuLaunchKernel found with dlsym(dlopen("libcuda.so.1"), ...)
 *   multi      cuLaunchCooperativeKernelMultiDevice of one device
 *   probe:N:THINK_US  N launches, each waited for, THINK_US apart; prints the time from each launch
 *              call to its kernel's start on the simulated GPU (test-only gpufracFakeEventTime):
 *              "probe n=N p50_us=.. p99_us=.. max_us=.."
 *   wait       no launches (a pause between phases)
 *   elapsed, burst:N, capture   checks of the simulated GPU itself (compute_checks.c)
 *   streams, cost:N            checks of its streams and driver costs (compute_sim.c)
 *   qbench:N                   ns per clock read, cuStreamQuery and noop launch (bench/fake_gpu_bench.sh)
 *   overlap:N  N rounds of a 20 ms kernel on one stream beside 200 kernels of 100 us on another, then
 *              both waited for: "overlap rounds=N wall_ms=.. max_wait_us=.. slow=.." (the longest launch
 *              call on the second stream, and how many of them took 10 ms or more) (compute_streams.c)
 *   capopen:SECONDS  a capture left open on a scratch stream while the main stream runs async
 *   tp:SECONDS a two-GPU job: each step KERNEL on devices 0 and 1 at once, then both waited for
 * After each phase: "phase MODE launches=N rc=R" (R: the first error, 0 if none), then "wait MODE
 * max_us=W" (W: the longest time one launch call took, the gate's wait included), then "calls MODE
 * launch=L record=E query=Q sync=S cpu_us=C" (the driver calls the process made meanwhile, the
 * shim's own included: the fake driver counts them, gpufracFakeCost; C: the process's CPU time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compute_load.h"

static struct load g;
static const char* g_kernel = "sleep_500us";

static CUresult graph_once(void) {
  if (g.exec != NULL) return CUDA_SUCCESS;
  CUgraph graph;
  CUresult rc = cuStreamBeginCapture(g.stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
  for (int i = 0; i < 4 && rc == CUDA_SUCCESS; i++)
    rc = cuLaunchKernel(g.fn, 1, 1, 1, 1, 1, 1, 0, g.stream, NULL, NULL);
  CUresult end = cuStreamEndCapture(g.stream, &graph);
  if (rc == CUDA_SUCCESS) rc = end;
  if (rc == CUDA_SUCCESS) rc = cuGraphInstantiate(&g.exec, graph, 0);
  if (rc == CUDA_SUCCESS) rc = cuGraphDestroy(graph);
  return rc;
}

static CUresult one_launch(const char* mode) {
  if (strcmp(mode, "async") == 0 || strcmp(mode, "sync") == 0)
    return cuLaunchKernel(g.fn, 1, 1, 1, 1, 1, 1, 0, g.stream, NULL, NULL);
  if (strcmp(mode, "graph") == 0) return cuGraphLaunch(g.exec, g.stream);
  if (strcmp(mode, "coop") == 0) return cuLaunchCooperativeKernel(g.fn, 1, 1, 1, 1, 1, 1, 0, g.stream, NULL);
  if (strcmp(mode, "ex") == 0) {
    CUlaunchConfig c = {1, 1, 1, 1, 1, 1, 0, g.stream, NULL, 0};
    return cuLaunchKernelEx(&c, g.fn, NULL, NULL);
  }
  if (strcmp(mode, "ptsz") == 0) return cuLaunchKernel_ptsz(g.fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
  if (strcmp(mode, "procaddr") == 0) return g.launch_pa(g.fn, 1, 1, 1, 1, 1, 1, 0, g.stream, NULL, NULL);
  if (strcmp(mode, "dlsym") == 0) return g.launch_dl(g.fn, 1, 1, 1, 1, 1, 1, 0, g.stream, NULL, NULL);
  if (strcmp(mode, "multi") == 0) {
    CUDA_LAUNCH_PARAMS p = {g.fn, 1, 1, 1, 1, 1, 1, 0, g.stream, NULL};
    return cuLaunchCooperativeKernelMultiDevice(&p, 1, 0);
  }
  fprintf(stderr, "compute_load: unknown mode %s\n", mode);
  exit(2);
}

/* Launches until `until` (0: forever); returns the first error. */
static CUresult loop(const char* mode, uint64_t until, unsigned long long* launches, uint64_t* max_wait) {
  CUresult rc = strcmp(mode, "graph") == 0 ? graph_once() : CUDA_SUCCESS;
  int wait = strcmp(mode, "sync") == 0;
  uint64_t now = load_now_ns();
  while (rc == CUDA_SUCCESS && (until == 0 || now < until)) {
    rc = one_launch(mode);
    uint64_t after = load_now_ns();
    if (after - now > *max_wait) *max_wait = after - now;
    if (rc == CUDA_SUCCESS && wait) rc = cuStreamSynchronize(g.stream);
    if (rc == CUDA_SUCCESS) ++*launches;
    now = wait ? load_now_ns() : after;
  }
  CUresult done = cuCtxSynchronize();
  return rc != CUDA_SUCCESS ? rc : done;
}

static int run_phase(const char* phase, uint64_t start, uint64_t end) {
  char mode[32];
  snprintf(mode, sizeof mode, "%.*s", (int)strcspn(phase, ":"), phase);
  load_sleep_until(start);
  if (strcmp(mode, "probe") == 0) return load_probe(&g, phase);
  if (strcmp(mode, "wait") == 0) return load_sleep_until(end), 0;
  if (strcmp(mode, "elapsed") == 0 || strcmp(mode, "burst") == 0 || strcmp(mode, "capture") == 0)
    return load_check(&g, phase);
  if (strcmp(mode, "streams") == 0) return load_streams();
  if (strcmp(mode, "cost") == 0) return load_cost(&g, (unsigned)strtoul(phase + 5, NULL, 10));
  if (strcmp(mode, "qbench") == 0) return load_qbench(&g, (unsigned)strtoul(phase + 7, NULL, 10));
  if (strcmp(mode, "overlap") == 0) return load_overlap(&g, phase);
  if (strcmp(mode, "tp") == 0) return load_tp(&g, g_kernel, end);
  unsigned long long launches = 0;
  uint64_t max_wait = 0, calls[4], spun, cost, cpu0 = load_cpu_ns();
  for (unsigned k = 0; k < 4; k++) gpufracFakeCost(k, &calls[k], &spun, &cost);
  CUstream scratch = NULL;
  int open_capture = strcmp(mode, "capopen") == 0;
  if (open_capture && load_capture_open(&scratch) != CUDA_SUCCESS) return 1;
  CUresult rc = loop(open_capture ? "async" : mode, end, &launches, &max_wait);
  if (open_capture) load_capture_close(scratch);
  printf("phase %s launches=%llu rc=%d\nwait %s max_us=%llu\n", mode, launches, (int)rc, mode,
         (unsigned long long)(max_wait / 1000));
  uint64_t now_calls[4];
  for (unsigned k = 0; k < 4; k++) gpufracFakeCost(k, &now_calls[k], &spun, &cost);
  printf("calls %s launch=%llu record=%llu query=%llu sync=%llu cpu_us=%llu\n", mode,
         (unsigned long long)(now_calls[0] - calls[0]), (unsigned long long)(now_calls[1] - calls[1]),
         (unsigned long long)(now_calls[2] - calls[2]), (unsigned long long)(now_calls[3] - calls[3]),
         (unsigned long long)((load_cpu_ns() - cpu0) / 1000));
  fflush(stdout);
  return rc == CUDA_SUCCESS ? 0 : 1;
}

int main(int argc, char** argv) {
  int dev = 0, i = 1;
  const char* kernel = "sleep_500us";
  uint64_t at = 0;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
    if (strcmp(argv[i], "-d") == 0) dev = atoi(argv[i + 1]);
    if (strcmp(argv[i], "-k") == 0) kernel = g_kernel = argv[i + 1];
    if (strcmp(argv[i], "--at") == 0) at = strtoull(argv[i + 1], NULL, 10);
    if (strcmp(argv[i], "--mps") == 0 &&
        gpufracFakeMpsClient((unsigned)dev, (unsigned)atoi(argv[i + 1])) != CUDA_SUCCESS)
      return 3;
  }
  if (load_setup(&g, dev, kernel) != 0) return 3;
  uint64_t t = at != 0 ? at : load_now_ns();
  int failed = 0;
  for (; i < argc; i++) {
    const char* colon = strrchr(argv[i], ':');
    double seconds = colon != NULL ? atof(colon + 1) : 0;
    if (strncmp(argv[i], "probe:", 6) == 0 || strncmp(argv[i], "burst:", 6) == 0 || strncmp(argv[i], "cost:", 5) == 0 ||
        strncmp(argv[i], "qbench:", 7) == 0 || strncmp(argv[i], "overlap:", 8) == 0)
      seconds = 0;
    uint64_t end = seconds > 0 ? t + (uint64_t)(seconds * 1e9) : 0;
    failed |= run_phase(argv[i], t, end);
    t = end != 0 ? end : load_now_ns();
  }
  return failed;
}
