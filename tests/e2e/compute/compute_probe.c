/* compute_load's setup and its latency probe. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compute_load.h"

uint64_t load_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t load_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void load_sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
  while (load_now_ns() < t) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* sleep_<N>(ns|us|ms)[_w<P>], as the fake driver reads the name. */
static uint64_t kernel_ns(const char* name) {
  char* end = NULL;
  if (strncmp(name, "sleep_", 6) != 0) return 0;
  unsigned long long n = strtoull(name + 6, &end, 10);
  if (strncmp(end, "us", 2) == 0) return n * 1000ull;
  if (strncmp(end, "ms", 2) == 0) return n * 1000000ull;
  return strncmp(end, "ns", 2) == 0 ? n : 0;
}

int load_setup(struct load* g, int dev, const char* kernel) {
  CUdevice d;
  CUmodule mod;
  CUresult rc = cuInit(0);
  if (rc == CUDA_SUCCESS) rc = cuDeviceGet(&d, dev);
  if (rc == CUDA_SUCCESS) rc = cuCtxCreate(&g->ctx, 0, d);
  if (rc == CUDA_SUCCESS) rc = cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS) rc = cuModuleLoadData(&mod, "fake");
  if (rc == CUDA_SUCCESS) rc = cuModuleGetFunction(&g->fn, mod, kernel);
  if (rc == CUDA_SUCCESS) rc = cuGetProcAddress("cuLaunchKernel", (void**)&g->launch_pa, 12040, 0, NULL);
  if (rc != CUDA_SUCCESS) {
    fprintf(stderr, "compute_load: setup failed: %d\n", (int)rc);
    return -1;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  g->launch_dl = lib != NULL ? (launch_fn)dlsym(lib, "cuLaunchKernel") : NULL;
  if (g->launch_dl == NULL) return fprintf(stderr, "compute_load: no cuLaunchKernel by dlsym\n"), -1;
  g->kernel_ns = kernel_ns(kernel);
  return 0;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

/* One launch waited for: the time from the call to the kernel's start, or UINT64_MAX on error. */
static uint64_t probe_once(struct load* g, CUevent ev) {
  uint64_t t0 = load_now_ns(), done = 0;
  if (cuLaunchKernel(g->fn, 1, 1, 1, 1, 1, 1, 0, g->stream, NULL, NULL) != CUDA_SUCCESS ||
      cuEventRecord(ev, g->stream) != CUDA_SUCCESS || cuEventSynchronize(ev) != CUDA_SUCCESS ||
      gpufracFakeEventTime(ev, &done) != CUDA_SUCCESS)
    return UINT64_MAX;
  uint64_t start = done - g->kernel_ns;
  return start > t0 ? start - t0 : 0;
}

int load_probe(struct load* g, const char* phase) {
  unsigned n = 0, think_us = 0;
  if (sscanf(phase, "probe:%u:%u", &n, &think_us) != 2 || n == 0) {
    fprintf(stderr, "compute_load: %s: accepted: probe:N:THINK_US\n", phase);
    return 1;
  }
  CUevent ev;
  if (cuEventCreate(&ev, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return 1;
  uint64_t* waits = calloc(n, sizeof *waits);
  for (unsigned i = 0; i < n; i++) {
    if ((waits[i] = probe_once(g, ev)) == UINT64_MAX) return printf("probe failed at %u\n", i), 1;
    load_sleep_until(load_now_ns() + think_us * 1000ull);
  }
  qsort(waits, n, sizeof *waits, cmp_u64);
  printf("probe n=%u p50_us=%llu p99_us=%llu max_us=%llu\n", n, (unsigned long long)(waits[n / 2] / 1000),
         (unsigned long long)(waits[(n * 99) / 100] / 1000), (unsigned long long)(waits[n - 1] / 1000));
  fflush(stdout);
  free(waits);
  return 0;
}
