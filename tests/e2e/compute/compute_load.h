/* compute_load's state and helpers (compute_load.c, compute_probe.c). */
#ifndef GPUFRAC_TESTS_COMPUTE_LOAD_H
#define GPUFRAC_TESTS_COMPUTE_LOAD_H

#include <stdint.h>

#include <cuda.h>

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);

struct load {
  CUcontext ctx;
  CUstream stream;
  CUfunction fn;
  uint64_t kernel_ns;  /* the kernel's duration on the simulated GPU */
  CUgraphExec exec;    /* the captured graph, once made */
  launch_fn launch_pa; /* cuLaunchKernel as cuGetProcAddress hands it out */
  launch_fn launch_dl; /* and as dlsym does */
};

uint64_t load_now_ns(void);
uint64_t load_cpu_ns(void); /* the process's CPU time */
void load_sleep_until(uint64_t t);
/* Context on device dev, a stream, the kernel and cuGetProcAddress's cuLaunchKernel. 0 or -1. */
int load_setup(struct load* g, int dev, const char* kernel);
/* Checks of the simulated GPU (compute_checks.c): "elapsed", "burst:N", "capture". 0 or 1. */
int load_check(struct load* g, const char* phase);
/* Checks of streams and driver costs (compute_sim.c): "streams", "cost:N"; "qbench:N" measures
 * what a query and a launch cost (bench/fake_gpu_bench.sh). 0 or 1. */
int load_streams(void);
int load_cost(struct load* g, unsigned n);
int load_qbench(struct load* g, unsigned n);
/* "probe:N:THINK_US": prints the launch-to-start waits' percentiles. 0 or 1. */
int load_probe(struct load* g, const char* phase);
/* compute_streams.c: "overlap:N" (two streams; prints wall time and the short launches' longest
 * call). 0 or 1. */
int load_overlap(struct load* g, const char* phase);
/* "tp:SECONDS": steps of a two-GPU job (KERNEL on devices 0 and 1 at once, both waited for) until
 * `until`: "tp steps=N seconds=S rc=R". 0 or 1. */
int load_tp(struct load* g, const char* kernel, uint64_t until);
/* A capture begun on a new scratch stream with one launch in it, left open; closed again. */
CUresult load_capture_open(CUstream* scratch);
void load_capture_close(CUstream scratch);

#endif /* GPUFRAC_TESTS_COMPUTE_LOAD_H */
