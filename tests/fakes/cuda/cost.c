/* The CPU time driver calls cost (README.md "CPU cost of driver calls"): each launch, event
 * record, query and synchronise busy-spins the calling thread for its cost, set by
 * GPUFRAC_FAKE_CUDA_COST="launch=3us,record=1us,query=0.3us,sync=1us" (the defaults; "0": all
 * free). Every call and the time it spun are counted per process; gpufracFakeCost (test-only)
 * reads the counts, so a test checks that the spin happened without timing anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

#define COST_ENV "GPUFRAC_FAKE_CUDA_COST"

static const char* const kNames[FAKE_COST_KINDS] = {"launch", "record", "query", "sync"};
static uint64_t g_cost[FAKE_COST_KINDS] = {3000, 1000, 300, 1000}; /* ns */
static uint64_t g_calls[FAKE_COST_KINDS], g_spun[FAKE_COST_KINDS]; /* atomic */

/* "<N>[.<digits>](ns|us|ms)" or "0" -> ns (fractions of a ns dropped); -1 when malformed. */
static int64_t parse_duration(const char* s) {
  uint64_t whole = 0, frac = 0, scale = 1;
  const char* p = s;
  if (strcmp(s, "0") == 0) return 0;
  if (*p < '0' || *p > '9') return -1;
  for (; *p >= '0' && *p <= '9'; p++) whole = whole * 10 + (uint64_t)(*p - '0');
  if (*p == '.') {
    for (p++; *p >= '0' && *p <= '9' && scale < 1000000; p++) frac = frac * 10 + (uint64_t)(*p - '0'), scale *= 10;
  }
  uint64_t unit = strcmp(p, "ns") == 0 ? 1 : strcmp(p, "us") == 0 ? 1000 : strcmp(p, "ms") == 0 ? 1000000 : 0;
  if (unit == 0 || whole > 1000000) return -1;
  return (int64_t)(whole * unit + frac * unit / scale);
}

static int parse_entry(char* item) {
  char* eq = strchr(item, '=');
  if (eq == NULL) return -1;
  *eq = '\0';
  int64_t ns = parse_duration(eq + 1);
  for (int k = 0; k < FAKE_COST_KINDS && ns >= 0; k++) {
    if (strcmp(item, kNames[k]) == 0) return g_cost[k] = (uint64_t)ns, 0;
  }
  *eq = '=';
  return -1;
}

int fake_cost_config(void) {
  const char* spec = getenv(COST_ENV);
  if (spec == NULL || spec[0] == '\0') return 0;
  if (strcmp(spec, "0") == 0) return memset(g_cost, 0, sizeof g_cost), 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
    if (parse_entry(item) != 0) {
      fprintf(stderr,
              "fake libcuda: %s: bad entry \"%s\"; accepted: 0 (every call free) or launch|record|query|sync="
              "<N>ns|us|ms or 0, comma-separated (e.g. launch=3us,record=1us,query=0.3us,sync=1us)\n",
              COST_ENV, item);
      return -1;
    }
  }
  return 0;
}

void fake_cost(enum fake_cost_kind kind) {
  uint64_t cost = g_cost[kind];
  __atomic_fetch_add(&g_calls[kind], 1, __ATOMIC_RELAXED);
  if (cost == 0) return;
  uint64_t t0 = fake_now_ns(), t = t0;
  while (t - t0 < cost) t = fake_now_ns();
  __atomic_fetch_add(&g_spun[kind], t - t0, __ATOMIC_RELAXED);
}

FAKE_API CUresult gpufracFakeCost(unsigned kind, uint64_t* calls, uint64_t* spun_ns, uint64_t* cost_ns) {
  if (kind >= FAKE_COST_KINDS || calls == NULL || spun_ns == NULL || cost_ns == NULL) return CUDA_ERROR_INVALID_VALUE;
  *calls = __atomic_load_n(&g_calls[kind], __ATOMIC_RELAXED);
  *spun_ns = __atomic_load_n(&g_spun[kind], __ATOMIC_RELAXED);
  *cost_ns = g_cost[kind];
  return CUDA_SUCCESS;
}
