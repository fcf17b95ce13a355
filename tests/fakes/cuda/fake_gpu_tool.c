/* Reads the simulated GPU's file (fake_gpu.h) for tests:
 *   fake_gpu_tool init FILE                   create it, fully allocated (before binding it anywhere),
 *       with the timeslice GPUFRAC_FAKE_CUDA_TIMESLICE names (default 2 ms)
 *   fake_gpu_tool now                         CLOCK_MONOTONIC in ns
 *   fake_gpu_tool window FILE SECONDS [TAG..] achieved GPU time per client over the next SECONDS:
 *       "<tag> gpu_ns=<ns> share=<% of the clients' sum> busy=<% of the window>", one line each, then
 *       "total gpu_ns=<ns> busy=<% of the window>"; with TAGs, those clients in that order (the sum
 *       is theirs)
 *   fake_gpu_tool total FILE TAG              "runs=<runs submitted> gpu_ns=<achieved by now>"
 *   fake_gpu_tool wait FILE TAG N [SECONDS]   until client TAG submitted N runs (default 30 s): 0, or 1
 *   fake_gpu_tool gaps FILE T0 T1             the longest time in [T0, T1] (ns) no device ran anything:
 *       "max_gap_ns=<ns> runs=<slices that overlap> complete=<0 when older slices left the ring>", then
 *       "gaps <10us=N ... >=5ms=N": the idle gaps by size
 *   fake_gpu_tool done FILE SECONDS TAG...    the pieces of work each client completed over the next
 *       SECONDS (seen complete by its processes): "<tag> kernels=<n> per_s=<n / SECONDS>", one line each
 *   fake_gpu_tool slices FILE T0 T1 TAG...    the slices each client's contexts ran in [T0, T1]:
 *       "<tag> slices=<n> ran_ns=<ns> longest_ns=<ns>", one line each (a slice cut by T0 or T1
 *       counts for its part inside) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fake_gpu.h"

static struct fake_gpu_file* open_file(const char* path, int create) {
  int fd = open(path, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0666);
  if (fd < 0 || (create && posix_fallocate(fd, 0, sizeof(struct fake_gpu_file)) != 0)) {
    perror(path);
    exit(2);
  }
  struct fake_gpu_file* m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    perror(path);
    exit(2);
  }
  fake_sim_bind(m, fd); /* fd stays open: liveness checks ask the kernel about its locks */
  return m;
}

static int init(const char* path) {
  const char* text = getenv(FAKE_GPU_TIMESLICE_ENV);
  uint64_t ts = text != NULL ? fake_sim_parse_timeslice(text) : FAKE_GPU_TIMESLICE_DEFAULT;
  if (ts == 0) {
    fprintf(stderr,
            "fake_gpu_tool: %s: bad value \"%s\"; accepted: default, short, medium, long or <N>ns|us|ms from 1us "
            "to 1000ms\n",
            FAKE_GPU_TIMESLICE_ENV, text);
    return 2;
  }
  fake_sim_init_header(open_file(path, 1), ts);
  return 0;
}

static int client_index(const struct fake_gpu_file* g, const char* tag) {
  for (int i = 0; i < FAKE_GPU_CLIENTS; i++) {
    if (__atomic_load_n(&g->clients[i].state, __ATOMIC_ACQUIRE) == 2 && strcmp(g->clients[i].tag, tag) == 0) return i;
  }
  return -1;
}

static int window(const struct fake_gpu_file* g, double seconds, int ntags, char** tags) {
  uint64_t before[FAKE_GPU_CLIENTS], after[FAKE_GPU_CLIENTS], sum = 0;
  uint64_t t0 = fake_sim_achieved(before);
  struct timespec d = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&d, NULL);
  uint64_t t1 = fake_sim_achieved(after), span = t1 - t0;
  for (uint32_t c = 0; c < FAKE_GPU_CLIENTS; c++) after[c] = after[c] > before[c] ? after[c] - before[c] : 0;
  for (int i = 0; i < (ntags > 0 ? ntags : FAKE_GPU_CLIENTS); i++) {
    int c = ntags > 0 ? client_index(g, tags[i]) : i;
    if (c >= 0) sum += after[c];
  }
  for (int i = 0; i < (ntags > 0 ? ntags : FAKE_GPU_CLIENTS); i++) {
    int c = ntags > 0 ? client_index(g, tags[i]) : i;
    if (ntags == 0 && __atomic_load_n(&g->clients[c].state, __ATOMIC_ACQUIRE) != 2) continue;
    uint64_t v = c >= 0 ? after[c] : 0;
    printf("%s gpu_ns=%llu share=%.2f busy=%.2f\n", ntags > 0 ? tags[i] : g->clients[c].tag, (unsigned long long)v,
           sum ? 100.0 * (double)v / (double)sum : 0.0, 100.0 * (double)v / (double)span);
  }
  printf("total gpu_ns=%llu busy=%.2f\n", (unsigned long long)sum, 100.0 * (double)sum / (double)span);
  return 0;
}

static int total(const struct fake_gpu_file* g, const char* tag) {
  uint64_t done[FAKE_GPU_CLIENTS];
  int c = client_index(g, tag);
  fake_sim_achieved(done);
  printf("runs=%llu gpu_ns=%llu\n", c >= 0 ? (unsigned long long)g->clients[c].runs : 0ull,
         c >= 0 ? (unsigned long long)done[c] : 0ull);
  return c < 0;
}

static int done(const struct fake_gpu_file* g, double seconds, int ntags, char** tags) {
  uint64_t before[FAKE_GPU_CLIENTS];
  for (int c = 0; c < FAKE_GPU_CLIENTS; c++) before[c] = __atomic_load_n(&g->clients[c].kernels, __ATOMIC_ACQUIRE);
  uint64_t t0 = fake_sim_now();
  struct timespec d = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&d, NULL);
  double span = (double)(fake_sim_now() - t0) / 1e9;
  for (int i = 0; i < ntags; i++) {
    int c = client_index(g, tags[i]);
    uint64_t n = c >= 0 ? __atomic_load_n(&g->clients[c].kernels, __ATOMIC_ACQUIRE) - before[c] : 0;
    printf("%s kernels=%llu per_s=%.1f\n", tags[i], (unsigned long long)n, (double)n / span);
  }
  return 0;
}

static int wait_runs(const struct fake_gpu_file* g, const char* tag, uint64_t n, double seconds) {
  uint64_t deadline = fake_sim_now() + (uint64_t)(seconds * 1e9);
  while (fake_sim_now() < deadline) {
    int c = client_index(g, tag);
    if (c >= 0 && __atomic_load_n(&g->clients[c].runs, __ATOMIC_ACQUIRE) >= n) return 0;
    usleep(10000);
  }
  fprintf(stderr, "fake_gpu_tool: client %s did not submit %llu runs in %.0f s\n", tag, (unsigned long long)n, seconds);
  return 1;
}

struct span {
  uint64_t start, end;
  uint32_t client; /* FAKE_GPU_CLIENTS: idle */
};

/* The slices of every device that overlap [t0, t1], cut to it, in spans[] (at most max); *complete
 * is 0 when the ring no longer holds the slice that covers t0. */
static size_t collect(const struct fake_gpu_file* g, uint64_t t0, uint64_t t1, struct span* spans, size_t max,
                      int* complete) {
  size_t n = 0;
  uint64_t now = fake_sim_now();
  *complete = 1;
  for (int dev = 0; dev < FAKE_GPU_DEVICES; dev++) {
    if (__atomic_load_n(&g->devs[dev].state, __ATOMIC_ACQUIRE) != 2) continue;
    uint64_t h = fake_sim_catch_up(dev, now);
    while (h == FAKE_SIM_AGAIN) h = fake_sim_catch_up(dev, now = fake_sim_now());
    uint64_t end = now, start = 0;
    int reached = 0;
    for (uint64_t k = h; k + FAKE_GPU_SLICES > h && n < max; k--) {
      uint32_t ctx;
      if (!fake_sim_slice(&g->devs[dev], k, &ctx, &start)) break;
      uint64_t a = start > t0 ? start : t0, b = end < t1 ? end : t1;
      uint32_t client = ctx == FAKE_GPU_IDLE ? FAKE_GPU_CLIENTS : g->devs[dev].ctxs[ctx].client;
      if (a < b) spans[n++] = (struct span){a, b, client};
      end = start;
      if (start <= t0 || k == 0) {
        reached = 1;
        break;
      }
    }
    *complete &= reached;
  }
  return n;
}

static int cmp_start(const void* a, const void* b) {
  const struct span *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

static int gaps(const struct fake_gpu_file* g, uint64_t t0, uint64_t t1) {
  static struct span spans[FAKE_GPU_DEVICES * FAKE_GPU_SLICES];
  static const uint64_t kUpTo[] = {10000, 50000, 100000, 200000, 500000, 1000000, 5000000, UINT64_MAX};
  static const char* const kName[] = {"<10us", "<50us", "<100us", "<200us", "<500us", "<1ms", "<5ms", ">=5ms"};
  int complete;
  size_t n = collect(g, t0, t1, spans, sizeof spans / sizeof spans[0], &complete), runs = 0;
  qsort(spans, n, sizeof spans[0], cmp_start);
  unsigned long long count[8] = {0};
  uint64_t covered = t0, max_gap = 0;
  for (size_t i = 0; i <= n; i++) {
    uint64_t next = i < n ? spans[i].start : t1;
    if (i < n && spans[i].client == FAKE_GPU_CLIENTS) continue; /* idle: not covered */
    if (next > covered) {
      int b = 0;
      while (next - covered >= kUpTo[b]) b++;
      count[b]++;
      if (next - covered > max_gap) max_gap = next - covered;
    }
    if (i < n && spans[i].end > covered) covered = spans[i].end;
    runs += i < n;
  }
  printf("max_gap_ns=%llu runs=%zu complete=%d\n", (unsigned long long)max_gap, runs, complete);
  printf("gaps");
  for (int b = 0; b < 8; b++) printf(" %s=%llu", kName[b], count[b]);
  printf("\n");
  return 0;
}

static int slices(const struct fake_gpu_file* g, uint64_t t0, uint64_t t1, int ntags, char** tags) {
  static struct span spans[FAKE_GPU_DEVICES * FAKE_GPU_SLICES];
  int complete;
  size_t n = collect(g, t0, t1, spans, sizeof spans / sizeof spans[0], &complete);
  for (int i = 0; i < ntags; i++) {
    int c = client_index(g, tags[i]);
    unsigned long long count = 0, ran = 0, longest = 0;
    for (size_t k = 0; k < n; k++) {
      if (c < 0 || spans[k].client != (uint32_t)c) continue;
      uint64_t len = spans[k].end - spans[k].start;
      count++, ran += len;
      if (len > longest) longest = len;
    }
    printf("%s slices=%llu ran_ns=%llu longest_ns=%llu\n", tags[i], count, ran, longest);
  }
  return complete ? 0 : 1;
}

int main(int argc, char** argv) {
  const char* cmd = argc > 1 ? argv[1] : "";
  if (strcmp(cmd, "now") == 0) return printf("%llu\n", (unsigned long long)fake_sim_now()) < 0;
  if (strcmp(cmd, "init") == 0 && argc == 3) return init(argv[2]);
  if (strcmp(cmd, "window") == 0 && argc >= 4) return window(open_file(argv[2], 0), atof(argv[3]), argc - 4, argv + 4);
  if (strcmp(cmd, "done") == 0 && argc >= 5) return done(open_file(argv[2], 0), atof(argv[3]), argc - 4, argv + 4);
  if (strcmp(cmd, "total") == 0 && argc == 4) return total(open_file(argv[2], 0), argv[3]);
  if (strcmp(cmd, "wait") == 0 && argc >= 5)
    return wait_runs(open_file(argv[2], 0), argv[3], strtoull(argv[4], NULL, 10), argc > 5 ? atof(argv[5]) : 30);
  if (strcmp(cmd, "gaps") == 0 && argc == 5)
    return gaps(open_file(argv[2], 0), strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
  if (strcmp(cmd, "slices") == 0 && argc >= 6)
    return slices(open_file(argv[2], 0), strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), argc - 5, argv + 5);
  fprintf(stderr, "usage: fake_gpu_tool init|now|window|done|total|wait|gaps|slices ... (see fake_gpu_tool.c)\n");
  return 2;
}
