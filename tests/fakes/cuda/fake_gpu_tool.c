/* Reads the simulated GPU's file (fake_gpu.h) for tests:
 *   fake_gpu_tool init FILE                   create it, fully allocated (before binding it anywhere)
 *   fake_gpu_tool now                         CLOCK_MONOTONIC in ns
 *   fake_gpu_tool window FILE SECONDS [TAG..] achieved GPU time per client over the next SECONDS:
 *       "<tag> gpu_ns=<ns> share=<% of the clients' sum> busy=<% of the window>", one line each, then
 *       "total gpu_ns=<ns> busy=<% of the window>"; with TAGs, those clients in that order (the sum
 *       is theirs)
 *   fake_gpu_tool total FILE TAG              "runs=<runs submitted> gpu_ns=<achieved by now>"
 *   fake_gpu_tool wait FILE TAG N [SECONDS]   until client TAG submitted N runs (default 30 s): 0, or 1
 *   fake_gpu_tool gaps FILE T0 T1             the longest time in [T0, T1] (ns) no run covered:
 *       "max_gap_ns=<ns> runs=<runs that overlap> complete=<0 when older runs left the ring>", then
 *       "gaps <10us=N ... >=5ms=N": the idle gaps by size */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fake_gpu.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct fake_gpu_file* open_file(const char* path, int create) {
  int fd = open(path, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0666);
  if (fd < 0 || (create && posix_fallocate(fd, 0, sizeof(struct fake_gpu_file)) != 0)) {
    perror(path);
    exit(2);
  }
  void* m = mmap(NULL, sizeof(struct fake_gpu_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    perror(path);
    exit(2);
  }
  return m;
}

static int client_index(const struct fake_gpu_file* g, const char* tag) {
  for (int i = 0; i < FAKE_GPU_CLIENTS; i++) {
    if (__atomic_load_n(&g->clients[i].state, __ATOMIC_ACQUIRE) == 2 && strcmp(g->clients[i].tag, tag) == 0) return i;
  }
  return -1;
}

static int window(const struct fake_gpu_file* g, double seconds, int ntags, char** tags) {
  uint64_t before[FAKE_GPU_CLIENTS], after[FAKE_GPU_CLIENTS], t0 = now_ns();
  fake_gpu_achieved(g, t0, before);
  struct timespec d = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&d, NULL);
  uint64_t t1 = now_ns(), sum = 0, span = t1 - t0;
  fake_gpu_achieved(g, t1, after);
  for (uint32_t c = 0; c < FAKE_GPU_CLIENTS; c++) after[c] -= before[c];
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
  fake_gpu_achieved(g, now_ns(), done);
  printf("runs=%llu gpu_ns=%llu\n", c >= 0 ? (unsigned long long)g->clients[c].runs : 0ull,
         c >= 0 ? (unsigned long long)done[c] : 0ull);
  return c < 0;
}

static int wait_runs(const struct fake_gpu_file* g, const char* tag, uint64_t n, double seconds) {
  uint64_t deadline = now_ns() + (uint64_t)(seconds * 1e9);
  while (now_ns() < deadline) {
    int c = client_index(g, tag);
    if (c >= 0 && __atomic_load_n(&g->clients[c].runs, __ATOMIC_ACQUIRE) >= n) return 0;
    usleep(10000);
  }
  fprintf(stderr, "fake_gpu_tool: client %s did not submit %llu runs in %.0f s\n", tag, (unsigned long long)n, seconds);
  return 1;
}

static int cmp_start(const void* a, const void* b) {
  const struct fake_gpu_run *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* How many idle gaps of each size runs[0..n) (sorted by start) leave after t0. */
static void histogram(const struct fake_gpu_run* runs, size_t n, uint64_t t0) {
  static const uint64_t kUpTo[] = {10000, 50000, 100000, 200000, 500000, 1000000, 5000000, UINT64_MAX};
  static const char* const kName[] = {"<10us", "<50us", "<100us", "<200us", "<500us", "<1ms", "<5ms", ">=5ms"};
  unsigned long long count[8] = {0};
  uint64_t covered = t0;
  for (size_t i = 0; i < n; i++) {
    int b = 0;
    while (runs[i].start > covered && runs[i].start - covered >= kUpTo[b]) b++;
    if (runs[i].start > covered) count[b]++;
    if (runs[i].end > covered) covered = runs[i].end;
  }
  printf("gaps");
  for (int b = 0; b < 8; b++) printf(" %s=%llu", kName[b], count[b]);
  printf("\n");
}

static int gaps(const struct fake_gpu_file* g, uint64_t t0, uint64_t t1) {
  static struct fake_gpu_run runs[FAKE_GPU_RING];
  size_t n = 0;
  uint64_t oldest = UINT64_MAX;
  for (size_t i = 0; i < FAKE_GPU_RING; i++) {
    struct fake_gpu_run r = g->runs[i];
    if (r.seq != 0 && r.start < oldest) oldest = r.start;
    if (r.seq != 0 && r.end > t0 && r.start < t1) runs[n++] = r;
  }
  qsort(runs, n, sizeof runs[0], cmp_start);
  uint64_t covered = t0, max_gap = 0;
  for (size_t i = 0; i < n; i++) {
    if (runs[i].start > covered && runs[i].start - covered > max_gap) max_gap = runs[i].start - covered;
    if (runs[i].end > covered) covered = runs[i].end;
  }
  if (t1 > covered && t1 - covered > max_gap) max_gap = t1 - covered;
  /* A window older than the ring's oldest run is not fully known: complete=0. */
  int complete = g->ring_next <= FAKE_GPU_RING || oldest <= t0;
  printf("max_gap_ns=%llu runs=%zu complete=%d\n", (unsigned long long)max_gap, n, complete);
  histogram(runs, n, t0);
  return 0;
}

int main(int argc, char** argv) {
  const char* cmd = argc > 1 ? argv[1] : "";
  if (strcmp(cmd, "now") == 0) return printf("%llu\n", (unsigned long long)now_ns()) < 0;
  if (strcmp(cmd, "init") == 0 && argc == 3) return open_file(argv[2], 1) == NULL;
  if (strcmp(cmd, "window") == 0 && argc >= 4) return window(open_file(argv[2], 0), atof(argv[3]), argc - 4, argv + 4);
  if (strcmp(cmd, "total") == 0 && argc == 4) return total(open_file(argv[2], 0), argv[3]);
  if (strcmp(cmd, "wait") == 0 && argc >= 5)
    return wait_runs(open_file(argv[2], 0), argv[3], strtoull(argv[4], NULL, 10), argc > 5 ? atof(argv[5]) : 30);
  if (strcmp(cmd, "gaps") == 0 && argc == 5)
    return gaps(open_file(argv[2], 0), strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
  fprintf(stderr, "usage: fake_gpu_tool init|now|window|total|wait|gaps ... (see fake_gpu_tool.c)\n");
  return 2;
}
