/* A randomised check of the simulated GPU's answers (fake_gpu_test.sh): four threads, each with a
 * stream of its own (blocking or not, at random), launch random kernels (some on the legacy
 * stream), record an event and wait for it by cuEventSynchronize, cuStreamSynchronize or polling
 * cuEventQuery, for SECONDS. Every event must then be complete, at a simulated time between its
 * record and the return of the wait, and not before the stream's previous event. Run by several
 * processes at once, some killed at random: every process's answers must stay consistent.
 *   fake_gpu_stress SECONDS    prints "stress ok events=<n>" or one line per broken rule; 0 or 1 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

static CUcontext g_ctx;
static CUfunction g_fns[4];
static uint64_t g_until, g_events;
static int g_broken;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void broken(const char* what, uint64_t a, uint64_t b) {
  fprintf(stderr, "stress: %s (%llu, %llu)\n", what, (unsigned long long)a, (unsigned long long)b);
  __atomic_store_n(&g_broken, 1, __ATOMIC_RELAXED);
}

/* Waits for event e of stream s in one of three ways. */
static void wait_for(CUevent e, CUstream s, unsigned* seed) {
  switch (rand_r(seed) % 3) {
    case 0:
      cuEventSynchronize(e);
      break;
    case 1:
      cuStreamSynchronize(s);
      break;
    default:
      while (cuEventQuery(e) == CUDA_ERROR_NOT_READY) usleep((useconds_t)(rand_r(seed) % 300));
  }
}

/* One round: launches, an event, a wait; returns the event's time (0 when broken). */
static uint64_t round_once(CUstream s, CUevent e, unsigned* seed) {
  for (int i = rand_r(seed) % 8; i > 0; i--)
    cuLaunchKernel(g_fns[rand_r(seed) % 4], 1, 1, 1, 1, 1, 1, 0, rand_r(seed) % 5 == 0 ? NULL : s, NULL, NULL);
  uint64_t recorded = now_ns(), t = 0;
  cuEventRecord(e, s);
  wait_for(e, s, seed);
  uint64_t back = now_ns();
  if (gpufracFakeEventTime(e, &t) != CUDA_SUCCESS) return broken("not complete after its wait", recorded, back), 0;
  if (t < recorded || t > back) return broken("completed outside [record, wait's return]", t, recorded), 0;
  return t;
}

static void* worker(void* arg) {
  unsigned seed = (unsigned)(uintptr_t)arg ^ (unsigned)getpid();
  CUstream s;
  CUevent e;
  uint64_t prev = 0;
  cuCtxSetCurrent(g_ctx);
  if (cuStreamCreate(&s, rand_r(&seed) % 2 ? CU_STREAM_NON_BLOCKING : 0) != CUDA_SUCCESS ||
      cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
    return broken("setup", 0, 0), NULL;
  while (now_ns() < g_until && !__atomic_load_n(&g_broken, __ATOMIC_RELAXED)) {
    uint64_t t = round_once(s, e, &seed);
    if (t != 0 && t < prev) broken("an event before the stream's previous one", t, prev);
    prev = t;
    __atomic_fetch_add(&g_events, 1, __ATOMIC_RELAXED);
    usleep((useconds_t)(rand_r(&seed) % 2000));
  }
  return NULL;
}

int main(int argc, char** argv) {
  CUdevice d;
  CUmodule m;
  const char* names[] = {"sleep_100us", "sleep_1ms", "sleep_3ms", "noop"};
  if (argc != 2 || cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&d, 0) != CUDA_SUCCESS ||
      cuCtxCreate(&g_ctx, 0, d) != CUDA_SUCCESS || cuModuleLoadData(&m, "stress") != CUDA_SUCCESS)
    return fprintf(stderr, "usage: fake_gpu_stress SECONDS (over the fake libcuda.so.1)\n"), 2;
  for (int i = 0; i < 4; i++) cuModuleGetFunction(&g_fns[i], m, names[i]);
  g_until = now_ns() + (uint64_t)(atof(argv[1]) * 1e9);
  pthread_t threads[4];
  for (uintptr_t i = 0; i < 4; i++) pthread_create(&threads[i], NULL, worker, (void*)(i * 7919 + 1));
  for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
  if (!g_broken) printf("stress ok events=%llu\n", (unsigned long long)g_events);
  return g_broken;
}
