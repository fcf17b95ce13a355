/* The simulated GPU shared by every process on the host (README.md "Simulated GPU"): a file named
 * by GPUFRAC_FAKE_CUDA_GPU (a process-private one when unset), mapped MAP_SHARED. Each device is a
 * single server in real time: work runs in the order it was submitted, one piece at a time, from
 * max(now, the device's busy-until, its stream's tail) for its duration (a CAS on busy_until).
 * Every piece of work is also written to a ring of runs, charged to the client (a tag from
 * GPUFRAC_FAKE_CUDA_CLIENT) that submitted it; a run leaves the ring when its entry is reused,
 * and only then is its duration added to the client's retired time. A client's achieved GPU time
 * at time t is its retired time plus, for each run still in the ring, the part of [start, end)
 * before t: time counts as it completes, not as it is submitted. Shared by the fake library and
 * the tool that reads the file (fake_gpu_tool.c). */
#ifndef GPUFRAC_FAKE_CUDA_FAKE_GPU_H
#define GPUFRAC_FAKE_CUDA_FAKE_GPU_H

#include <stdint.h>

#define FAKE_GPU_MAGIC 0x55504746u /* "FGPU" */
#define FAKE_GPU_VERSION 1u
#define FAKE_GPU_DEVICES 8
#define FAKE_GPU_CLIENTS 64
#define FAKE_GPU_RING 32768 /* runs kept; more than any test has in flight */
#define FAKE_GPU_TAG 32
#define FAKE_GPU_ENV "GPUFRAC_FAKE_CUDA_GPU"
#define FAKE_GPU_CLIENT_ENV "GPUFRAC_FAKE_CUDA_CLIENT"

struct fake_gpu_dev {
  uint32_t state; /* atomic: 0 free, 1 being claimed, 2 uuid valid */
  uint8_t uuid[16];
  uint32_t pad0;
  uint64_t busy_until; /* atomic: CLOCK_MONOTONIC ns at which the last submitted work ends */
  uint64_t pad1[4];
};

struct fake_gpu_client {
  uint32_t state; /* atomic: 0 free, 1 being claimed, 2 tag valid */
  uint32_t pad0;
  char tag[FAKE_GPU_TAG];
  uint64_t retired_ns; /* atomic: durations of this client's runs that left the ring */
  uint64_t runs;       /* atomic: runs submitted */
  uint64_t pad1;
};

/* seq = ring index + 1 once written (0: never); a writer killed half-way leaves an older seq. */
struct fake_gpu_run {
  uint64_t seq; /* atomic */
  uint32_t client;
  uint32_t dev;
  uint64_t start, end; /* CLOCK_MONOTONIC ns */
};

struct fake_gpu_file {
  uint32_t magic, version, size, pad0;
  uint64_t ring_next; /* atomic: runs ever submitted */
  uint64_t pad1[6];
  struct fake_gpu_dev devs[FAKE_GPU_DEVICES];
  struct fake_gpu_client clients[FAKE_GPU_CLIENTS];
  struct fake_gpu_run runs[FAKE_GPU_RING];
};

_Static_assert(sizeof(struct fake_gpu_dev) == 64, "one line per device");
_Static_assert(sizeof(struct fake_gpu_client) == 64, "one line per client");

/* The part of [start, end) before t. */
static inline uint64_t fake_gpu_done_by(uint64_t start, uint64_t end, uint64_t t) {
  if (t <= start) return 0;
  return (t < end ? t : end) - start;
}

/* Achieved GPU time of every client by time t (ns), in out[FAKE_GPU_CLIENTS]: exact unless runs
 * leave the ring meanwhile (then one run may count twice or not at all). */
static inline void fake_gpu_achieved(const struct fake_gpu_file* g, uint64_t t, uint64_t* out) {
  for (uint32_t c = 0; c < FAKE_GPU_CLIENTS; c++) out[c] = __atomic_load_n(&g->clients[c].retired_ns, __ATOMIC_ACQUIRE);
  uint64_t next = __atomic_load_n(&g->ring_next, __ATOMIC_ACQUIRE);
  uint64_t first = next > FAKE_GPU_RING ? next - FAKE_GPU_RING : 0;
  for (uint64_t i = first; i < next; i++) {
    const struct fake_gpu_run* r = &g->runs[i % FAKE_GPU_RING];
    if (__atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) != i + 1 || r->client >= FAKE_GPU_CLIENTS) continue;
    out[r->client] += fake_gpu_done_by(r->start, r->end, t);
  }
}

#endif /* GPUFRAC_FAKE_CUDA_FAKE_GPU_H */
