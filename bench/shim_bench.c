/* Shim overhead over the fake libcuda.so.1 (plain C timing; bench/shim_bench.sh runs it with and
 * without LD_PRELOAD of the shim and prints the difference). Modes:
 *   shim_bench ops [HOLDERS]  ns per cuMemAlloc_v2 + cuMemFree_v2 pair (1 MiB) and per
 *                             cuMemGetInfo_v2, best of 7 runs; with HOLDERS other processes of the
 *                             container alive, each holding one allocation (their slots are summed)
 *   shim_bench spawn N R      R rounds of N processes started at once; each reports the time from
 *                             just before its posix_spawn to its first successful allocation (cuInit,
 *                             context, shim configuration, slot registration included): median and
 *                             90th percentile over all N x R processes, in us
 *   shim_bench region-size    sizeof(struct gpufrac_region), for writing an empty region
 *   shim_bench lock-floor     ns per atomic read-modify-write on a line this thread owns (x86:
 *                             one locked instruction): the floor under the shim's per-call cost
 *   shim_bench launch         ns per cuLaunchKernel of a kernel that takes no time on the fake's
 *                             simulated GPU, on a created stream, best of 7 runs of 200,000
 *                             (bench/compute_bench.sh: without the shim, inert, arbitrated), in
 *                             wall time (launch_ns) and in the thread's CPU time (cpu_ns: what a
 *                             loaded machine's scheduling does not add; bench/gate_ab.sh)
 *   shim_bench first T0       (internal) one such process */
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <signal.h>

#include "gpufrac/limits_abi.h"

extern char** environ;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void setup(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuCtxCreate(&ctx, 0, dev) != CUDA_SUCCESS) {
    fprintf(stderr, "shim_bench: no fake device\n");
    exit(2);
  }
}

static double best_pair_ns(int iters) {
  double best = 1e30;
  for (int run = 0; run < 7; run++) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; i++) {
      CUdeviceptr p;
      if (cuMemAlloc(&p, 1u << 20) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) exit(3);
    }
    double ns = (double)(now_ns() - t0) / iters;
    if (ns < best) best = ns;
  }
  return best;
}

static double best_meminfo_ns(int iters) {
  double best = 1e30;
  for (int run = 0; run < 7; run++) {
    uint64_t t0 = now_ns();
    size_t f, t;
    for (int i = 0; i < iters; i++) {
      if (cuMemGetInfo(&f, &t) != CUDA_SUCCESS) exit(3);
    }
    double ns = (double)(now_ns() - t0) / iters;
    if (ns < best) best = ns;
  }
  return best;
}

/* Starts n copies of this program in mode "first" or "hold"; returns their stdout pipes. */
static void spawn(const char* self, const char* mode, int n, pid_t* pids, FILE** outs) {
  char stamp[32];
  snprintf(stamp, sizeof stamp, "%llu", (unsigned long long)now_ns());
  for (int i = 0; i < n; i++) {
    int fds[2];
    if (pipe(fds) != 0) exit(2);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char* argv[] = {(char*)self, (char*)mode, stamp, NULL};
    if (strcmp(mode, "first") == 0) snprintf(stamp, sizeof stamp, "%llu", (unsigned long long)now_ns());
    if (posix_spawn(&pids[i], self, &fa, NULL, argv, environ) != 0) exit(2);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    outs[i] = fdopen(fds[0], "r");
  }
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

static int mode_spawn(const char* self, int n, int rounds) {
  pid_t* pids = calloc((size_t)n, sizeof *pids);
  FILE** outs = calloc((size_t)n, sizeof *outs);
  uint64_t* us = calloc((size_t)(n * rounds), sizeof *us);
  for (int r = 0; r < rounds; r++) {
    spawn(self, "first", n, pids, outs);
    for (int i = 0; i < n; i++) {
      unsigned long long v = 0;
      if (fscanf(outs[i], "%llu", &v) != 1) return 3;
      us[r * n + i] = v / 1000;
      fclose(outs[i]);
      waitpid(pids[i], NULL, 0);
    }
  }
  size_t total = (size_t)(n * rounds);
  qsort(us, total, sizeof *us, cmp_u64);
  printf("start processes=%d rounds=%d median_us=%llu p90_us=%llu\n", n, rounds, (unsigned long long)us[total / 2],
         (unsigned long long)us[total * 9 / 10]);
  return 0;
}

static int mode_ops(const char* self, int holders) {
  pid_t pids[256];
  FILE* outs[256];
  if (holders > 256) holders = 256;
  spawn(self, "hold", holders, pids, outs);
  char line[64];
  for (int i = 0; i < holders; i++) {
    if (fgets(line, sizeof line, outs[i]) == NULL) return 3; /* each holds one allocation now */
  }
  setup();
  double pair = best_pair_ns(200000), meminfo = best_meminfo_ns(200000);
  printf("ops holders=%d pair_ns=%.1f meminfo_ns=%.1f\n", holders, pair, meminfo);
  for (int i = 0; i < holders; i++) {
    kill(pids[i], SIGTERM);
    waitpid(pids[i], NULL, 0);
    fclose(outs[i]);
  }
  return 0;
}

/* cuLaunchKernel of a kernel of no duration (the fake's "noop"), best of 7 runs. */
static int mode_launch(void) {
  CUstream s;
  CUmodule mod;
  CUfunction f;
  setup();
  if (cuStreamCreate(&s, 0) != CUDA_SUCCESS || cuModuleLoadData(&mod, "bench") != CUDA_SUCCESS ||
      cuModuleGetFunction(&f, mod, "noop") != CUDA_SUCCESS)
    return 3;
  double best = 1e30, best_cpu = 1e30;
  const int iters = 200000;
  for (int run = 0; run < 7; run++) {
    uint64_t t0 = now_ns(), c0 = cpu_ns();
    for (int i = 0; i < iters; i++) {
      if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS) return 3;
    }
    double ns = (double)(now_ns() - t0) / iters, cpu = (double)(cpu_ns() - c0) / iters;
    if (ns < best) best = ns;
    if (cpu < best_cpu) best_cpu = cpu;
  }
  printf("launch launch_ns=%.1f cpu_ns=%.1f\n", best, best_cpu);
  return cuStreamSynchronize(s) != CUDA_SUCCESS;
}

/* One uncontended atomic add, best of 7 runs: what each locked instruction of the shim costs. */
static int mode_lock_floor(void) {
  static uint64_t word __attribute__((aligned(64)));
  double best = 1e30;
  const int iters = 5000000;
  for (int run = 0; run < 7; run++) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; i++) __atomic_fetch_add(&word, 1, __ATOMIC_SEQ_CST);
    double ns = (double)(now_ns() - t0) / iters;
    if (ns < best) best = ns;
  }
  printf("lock-floor rmw_ns=%.2f\n", best);
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "ops";
  if (strcmp(mode, "first") == 0 || strcmp(mode, "hold") == 0) {
    uint64_t t0 = argc > 2 ? strtoull(argv[2], NULL, 10) : now_ns();
    setup();
    CUdeviceptr p;
    if (cuMemAlloc(&p, 1u << 20) != CUDA_SUCCESS) return 3;
    printf("%llu\n", (unsigned long long)(now_ns() - t0));
    fflush(stdout);
    if (mode[0] == 'h') pause();
    return 0;
  }
  if (strcmp(mode, "region-size") == 0) return printf("%zu\n", sizeof(struct gpufrac_region)) < 0;
  if (strcmp(mode, "lock-floor") == 0) return mode_lock_floor();
  if (strcmp(mode, "launch") == 0) return mode_launch();
  if (strcmp(mode, "spawn") == 0)
    return mode_spawn(argv[0], argc > 2 ? atoi(argv[2]) : 1, argc > 3 ? atoi(argv[3]) : 1);
  return mode_ops(argv[0], argc > 2 ? atoi(argv[2]) : 0);
}
