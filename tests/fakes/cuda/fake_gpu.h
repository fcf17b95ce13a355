/* The simulated GPU shared by every process on the host (README.md "Simulated GPU"): a file named
 * by GPUFRAC_FAKE_CUDA_GPU (a process-private mapping when unset), mapped MAP_SHARED, read and
 * advanced by the fake library (sim.c, gpu.c) and by the tool that reads it (fake_gpu_tool.c).
 *
 * The model. A device runs one context at a time (a context: one process's work on one device).
 * Its time is a sequence of slices, each given to one context or idle. A context keeps the device
 * while it has work, for at most one timeslice (the file's timeslice_ns); then the next context
 * with work, in slot order after it, gets the next slice (the same one again if no other has
 * work). A context that runs out of work ends its slice at once; with nobody left the slice is
 * idle, until the first arrival. While a context runs, all its streams progress at once: every
 * kernel that has arrived and whose stream and event dependencies are done advances at full speed.
 * So a context has a virtual clock V (ns of slices it ran), and a kernel of duration d that arrives
 * when V = r, behind dependencies that end at virtual time D, ends at virtual time
 * cv = max(r, D) + d: known when it is submitted. When that virtual time is reached in real time
 * depends on the slices, which depend on every process's future submissions, so it is known only
 * once it lies in the simulated past: a kernel is complete at time t when V(t) >= cv, and its real
 * completion time is found by walking the slices back from the newest.
 *
 * The rules that make this one deterministic answer for every process, without a lock:
 *   1. Slices are published once: slice k+1 is written into ring entry (k+1) % FAKE_GPU_SLICES by
 *      one 16-byte CAS from that entry's previous lap; whoever sees the newest slice end at or
 *      before the time it needs publishes the next one (catching up), and a CAS that loses means
 *      another process published it: everyone reads the same slice. A slice ends at
 *      min(start + timeslice, start + the context's remaining work) (idle: at the first arrival).
 *      A catch-up for a time before the newest slice's start (published by a process that read
 *      the clock later) answers FAKE_SIM_AGAIN: the caller reads the clock anew.
 *   2. A submission first catches the slices up to its arrival time a (now), reads V(a), then
 *      raises its context's `arrive` and `cmax` (the virtual time its work is done; atomic max) and
 *      catches up again (an idle device then starts its slice at a). Every slice published after
 *      the first catch-up starts after a: a submission never precedes the simulated frontier.
 *   3. A context's run record (the slice it runs or last ran, and V at its start, or V at its end
 *      once closed) changes by 16-byte CAS to values computed from published slices; every catch-up
 *      first closes the record of the context before the newest slice and opens the newest one's,
 *      so a process killed between publishing and bookkeeping leaves nothing behind.
 *   4. Liveness: a process owns its context slot by holding an OFD write lock on one byte of the
 *      file (FAKE_GPU_LOCK_BASE + device * FAKE_GPU_CTXS + slot); the kernel drops it when the
 *      process dies. A context whose owner is dead is skipped when a slice is decided (marked
 *      FAKE_CTX_DEAD: its queued work is dropped, as a real driver tears a dead context down) and
 *      its slot is reused. The running context keeps its slice to its end.
 * What a process killed anywhere leaves: its context's work queued before the kill, which runs
 * until the next slice is decided; at most one submission half-made (its cmax raised without the
 * slice that would start it: the next catch-up starts it). Nothing is locked, nobody waits for it.
 * A race the rules allow: a slice decided while another process raises cmax may not see that
 * raise, so the context yields early (it gets its next turn in order): a scheduling error, never
 * an inconsistency. The cost of a query is bounded: catching up publishes one slice per
 * timeslice elapsed at most, and the walk back for a completion time stops at the ring's end.
 *
 * MPS clients (fake_gpu_client_mps, mps_engine.c): the MPS clients of a device share one context,
 * the MPS server's (slot FAKE_GPU_MPS_SLOT), time-sliced against the others like any context;
 * their kernels run concurrently in it. A kernel of width w (percent of the SMs) of a client capped
 * at c runs at speed min(1, c / w) x f, where f = min(1, 100 / the sum over the device's active
 * MPS clients (work not done by the server's clock, and the submitter) of min(their cap, the width
 * of their latest kernel)): when they need more than all SMs, they share them in proportion to
 * their demands. The speed is fixed when the kernel is submitted, so its virtual completion time
 * is too (kernels queued before a client joins or leaves keep theirs: exact for clients that wait
 * for their kernels and for caps that sum to at most 100).
 *
 * Accounting: a client's achieved GPU time is the time its contexts ran (V), summed over its
 * contexts (retired_ns keeps that of contexts whose slot was reused), plus for MPS clients the
 * SM-time of their completed kernels (duration x width / 100 each: the GPU-time a kernel needs at
 * full width, whatever its speed). Exact unless a slot is reused during the read; an MPS client's
 * kernels count when its process sees them complete (its next launch, query or synchronise), as
 * do every client's completed kernels (`kernels`, throughput). */
#ifndef GPUFRAC_FAKE_CUDA_FAKE_GPU_H
#define GPUFRAC_FAKE_CUDA_FAKE_GPU_H

#include <stdint.h>

#define FAKE_GPU_MAGIC 0x55504746u /* "FGPU" */
#define FAKE_GPU_VERSION 2u
#define FAKE_GPU_DEVICES 8
#define FAKE_GPU_CLIENTS 64
#define FAKE_GPU_CTXS 64 /* contexts per device at once (the last: the MPS server's) */
#define FAKE_GPU_MPS_SLOT (FAKE_GPU_CTXS - 1)
#define FAKE_GPU_MPS_CLIENTS 48 /* MPS clients per device at once (Volta MPS's limit) */
#define FAKE_GPU_SLICES 32768   /* slices kept per device */
#define FAKE_GPU_IDLE 255u      /* the context of an idle slice */
#define FAKE_GPU_TAG 32
#define FAKE_GPU_LOCK_BASE (1ull << 40) /* liveness lock bytes, past the end of the file */
#define FAKE_GPU_MPS_LOCK_BASE (FAKE_GPU_LOCK_BASE + FAKE_GPU_DEVICES * FAKE_GPU_CTXS)
#define FAKE_GPU_MPS_SERVER_TAG "[mps-server]" /* the client the MPS server's context is charged to */
#define FAKE_GPU_ENV "GPUFRAC_FAKE_CUDA_GPU"
#define FAKE_GPU_CLIENT_ENV "GPUFRAC_FAKE_CUDA_CLIENT"
#define FAKE_GPU_TIMESLICE_ENV "GPUFRAC_FAKE_CUDA_TIMESLICE"
#define FAKE_GPU_TIMESLICE_DEFAULT 2000000ull /* ns: README.md "Time-slicing" says why */

enum { FAKE_CTX_FREE = 0, FAKE_CTX_LIVE = 1, FAKE_CTX_DEAD = 2 };

/* slice = index << 1 | closed; v = V at the slice's start while open, at its end once closed. */
struct fake_gpu_runrec {
  uint64_t slice, v;
} __attribute__((aligned(16)));

struct fake_gpu_ctx {
  uint32_t state;    /* atomic: generation << 8 | FAKE_CTX_* */
  uint32_t client;   /* whose work it is (clients[]) */
  uint64_t cmax;     /* atomic max: virtual ns at which its submitted work is done */
  uint64_t arrive;   /* atomic max: CLOCK_MONOTONIC ns of its latest submission */
  uint64_t v_origin; /* V when its current owner claimed it (achieved time counts from there) */
  struct fake_gpu_runrec run;
  uint64_t pad[2];
};

/* An MPS client (a process) on a device; its owner holds lock byte FAKE_GPU_MPS_LOCK_BASE +
 * device * FAKE_GPU_MPS_CLIENTS + index. */
struct fake_gpu_mps {
  uint32_t state;  /* atomic: 0 free, 1 in use */
  uint32_t client; /* whose work it is (clients[]) */
  uint32_t cap;    /* the percent of the SMs it may use */
  uint32_t width;  /* atomic: the width of its latest kernel */
  uint64_t cmax;   /* atomic max: the server's virtual time at which its work is done */
  uint64_t pad[5];
};

/* seq = (index + 1) << 8 | context (FAKE_GPU_IDLE: idle); 0: never written. */
struct fake_gpu_slice {
  uint64_t seq, start; /* start: CLOCK_MONOTONIC ns; a slice ends where the next one starts */
} __attribute__((aligned(16)));

struct fake_gpu_dev {
  uint32_t state; /* atomic: 0 free, 1 being claimed, 2 uuid valid */
  uint8_t uuid[16];
  uint32_t pad0;
  uint64_t head;     /* atomic max: a published slice (the newest is found from there) */
  uint64_t arrivals; /* atomic: submissions so far (an idle device's scan for work is redone when it moves) */
  uint64_t pad1[3];
  struct fake_gpu_ctx ctxs[FAKE_GPU_CTXS];
  struct fake_gpu_mps mps[FAKE_GPU_MPS_CLIENTS];
  struct fake_gpu_slice slices[FAKE_GPU_SLICES];
};

struct fake_gpu_client {
  uint32_t state; /* atomic: 0 free, 1 being claimed, 2 tag valid */
  uint32_t pad0;
  char tag[FAKE_GPU_TAG];
  uint64_t retired_ns; /* atomic: achieved time of its contexts whose slot was reused */
  uint64_t runs;       /* atomic: pieces of work submitted (kernels, graphs) */
  uint64_t kernels;    /* atomic: pieces of work completed (seen by their process) */
  uint64_t sm_ns;      /* atomic: SM-time of its completed MPS kernels */
  uint64_t pad1[7];
};

struct fake_gpu_file {
  uint32_t magic, version, size, pad0;
  uint64_t timeslice_ns; /* set once, by whoever creates the file (GPUFRAC_FAKE_CUDA_TIMESLICE) */
  uint64_t pad1[6];
  struct fake_gpu_client clients[FAKE_GPU_CLIENTS];
  struct fake_gpu_dev devs[FAKE_GPU_DEVICES];
};

_Static_assert(sizeof(struct fake_gpu_ctx) == 64, "one line per context");
_Static_assert(sizeof(struct fake_gpu_client) == 128, "two lines per client");
_Static_assert(sizeof(struct fake_gpu_mps) == 64, "one line per MPS client");

/* sim.c: the rules above, shared by the library and the tool. fd: the file's descriptor for
 * liveness (-1: a private GPU, every context alive). */
void fake_sim_bind(struct fake_gpu_file* g, int fd);
/* This process owns slot of device dev (liveness never asks the kernel about it). */
void fake_sim_own(int dev, int slot);
/* GPUFRAC_FAKE_CUDA_TIMESLICE's value in ns: default|short|medium|long or <N>ns|us|ms; 0: bad. */
uint64_t fake_sim_parse_timeslice(const char* text);
/* Writes the header (magic, version, size, timeslice) once. */
void fake_sim_init_header(struct fake_gpu_file* g, uint64_t timeslice_ns);
void fake_sim_dev_init(struct fake_gpu_dev* d);
/* Publishes slices until the newest covers time t; returns its index, or FAKE_SIM_AGAIN when the
 * newest starts after t (another process with a later clock published it: read the clock again). */
#define FAKE_SIM_AGAIN UINT64_MAX
uint64_t fake_sim_catch_up(int dev, uint64_t t);
/* Slice k (0: not published, or overwritten by a later lap). */
int fake_sim_slice(const struct fake_gpu_dev* d, uint64_t k, uint32_t* ctx, uint64_t* start);
/* Context slot's V at time t >= the start of slice h, h the newest slice (from catch_up(t));
 * FAKE_SIM_AGAIN when the slices moved on meanwhile (catch up to a new time and ask again). */
uint64_t fake_sim_v(int dev, int slot, uint64_t h, uint64_t t);
/* When the newest slice h ends as things stand (UINT64_MAX: idle until an arrival). */
uint64_t fake_sim_end(int dev, uint64_t h);
/* The first time slot's V reached cv (<= v_now, its V at now), walking back from slice h (the
 * oldest slice kept when it is older). */
uint64_t fake_sim_when(int dev, int slot, uint64_t cv, uint64_t h, uint64_t now, uint64_t v_now);
/* Claims a context slot on dev for client (the last one, shared, when all are taken). */
int fake_sim_claim(int dev, uint32_t client);
/* Achieved GPU time of every client (out[FAKE_GPU_CLIENTS]) now; returns the time it is for. */
uint64_t fake_sim_achieved(uint64_t* out);
struct fake_gpu_file* fake_sim_file(void);
int fake_sim_fd(void);
uint64_t fake_sim_now(void);

#endif /* GPUFRAC_FAKE_CUDA_FAKE_GPU_H */
