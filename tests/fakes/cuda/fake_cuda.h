/* Internal state of the fake libcuda.so.1 (see README.md). */
#ifndef GPUFRAC_FAKE_CUDA_INTERNAL_H
#define GPUFRAC_FAKE_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "cuda.h"

#define FAKE_MAX_DEVICES 32
#define FAKE_API __attribute__((visibility("default")))

struct fake_device {
  char uuid[64];     /* "GPU-..." or "MIG-..." */
  uint8_t bytes[16]; /* the UUID octets */
  uint64_t total;    /* bytes */
  uint64_t used;     /* bytes allocated, under fake_mem_lock */
};

struct fake_ctx {
  uint32_t magic; /* FAKE_CTX_MAGIC while alive */
  CUdevice dev;
  int primary;
};
#define FAKE_CTX_MAGIC 0x43545846u

struct fake_pool {
  uint32_t magic; /* FAKE_POOL_MAGIC while alive */
  CUdevice dev;   /* -1: a host-located pool (not device memory) */
  int is_default;
};
#define FAKE_POOL_MAGIC 0x4c4f4f50u

/* devices.c */
extern struct fake_device fake_devices[FAKE_MAX_DEVICES];
extern int fake_device_count;
/* CUDA_SUCCESS once cuInit succeeded, else CUDA_ERROR_NOT_INITIALIZED. */
CUresult fake_check_init(void);
CUresult fake_check_device(CUdevice dev);

/* context.c */
/* The current context's device, or CUDA_ERROR_INVALID_CONTEXT. */
CUresult fake_current_device(CUdevice* dev);

/* memory.c: the allocation registry. Kinds keep pointers, handles and arrays apart. */
enum fake_kind { FAKE_PTR = 1, FAKE_HANDLE = 2, FAKE_ARRAY = 3, FAKE_MIPMAP = 4 };
/* Allocates size bytes on dev (dev < 0: host memory, not counted) and returns a fresh key:
 * a fake device address for FAKE_PTR (512-byte aligned, reused after free), an id otherwise. */
CUresult fake_mem_alloc(enum fake_kind kind, CUdevice dev, uint64_t size, uint64_t* key);
CUresult fake_mem_free(enum fake_kind kind, uint64_t key);
uint64_t fake_mem_used(CUdevice dev);
/* The device allocation (FAKE_PTR) holding [addr, addr + len): its base and size, or
 * CUDA_ERROR_INVALID_VALUE. */
CUresult fake_mem_range(uint64_t addr, uint64_t len, uint64_t* base, uint64_t* size);

/* gpu.c: the simulated GPU shared by the host's processes (fake_gpu.h). Times are CLOCK_MONOTONIC
 * ns; a virtual time (cv) is a point on this process's context clock on a device: the ns its
 * context has run there. */
uint64_t fake_now_ns(void);
void fake_sleep_until(uint64_t t);
struct fake_gpu_file* fake_gpu(void);
/* GPUFRAC_FAKE_CUDA_TIMESLICE and GPUFRAC_FAKE_CUDA_COST (cuInit): 0, or -1 after one line. */
int fake_gpu_config(void);
/* The simulated device (index in the shared file) of a CUDA device of this process. */
int fake_gpu_device(CUdevice dev);
/* Submits duration ns of work of width percent of the SMs on dev behind virtual time after;
 * returns the virtual time it is done, in *v_at the context's virtual time when it arrived and in
 * *sm_ns the SM-time it counts for when done (an MPS client's; 0 otherwise). */
uint64_t fake_gpu_submit(CUdevice dev, uint64_t after, uint64_t duration, unsigned width, uint64_t* v_at,
                         uint64_t* sm_ns);
/* This process's work seen complete: kernels pieces, sm_ns of SM-time (fake_gpu.h "Accounting"). */
void fake_gpu_completed(uint64_t kernels, uint64_t sm_ns);
/* The client entry of tag (NULL: this process's own). */
uint32_t fake_gpu_client_index(const char* tag);

/* mps_engine.c: MPS clients (fake_gpu.h "MPS clients"). A process that connected to an MPS daemon
 * calls fake_gpu_client_mps before its first launch on that device (idempotent; sm_percent 0 or
 * over 100: 100); its work there then runs in the device's MPS server context. */
void fake_gpu_client_mps(unsigned device_ordinal, unsigned sm_percent);
/* This process's SM percent on dev as an MPS client; 0: not one. */
unsigned fake_mps_cap(CUdevice dev);
/* Its record on simulated device gdev (claimed at the first call). */
int fake_mps_join(CUdevice dev, int gdev);
/* The time in the server's clock a kernel of duration ns and width percent takes now. */
uint64_t fake_mps_duration(CUdevice dev, int gdev, uint64_t duration, unsigned width, uint64_t v_now);
/* Its work is queued up to the server's virtual time cv. */
void fake_mps_queued(CUdevice dev, int gdev, uint64_t cv);
/* The context's virtual time now: work with cv <= it is complete. */
uint64_t fake_gpu_v(CUdevice dev);
/* Sleeps until virtual time cv is reached. */
void fake_gpu_wait(CUdevice dev, uint64_t cv);
/* When virtual time cv was reached (0: not yet). */
uint64_t fake_gpu_time_of(CUdevice dev, uint64_t cv);

/* cost.c: the CPU time of driver calls (GPUFRAC_FAKE_CUDA_COST). */
enum fake_cost_kind { FAKE_COST_LAUNCH, FAKE_COST_RECORD, FAKE_COST_QUERY, FAKE_COST_SYNC, FAKE_COST_KINDS };
int fake_cost_config(void);
/* Busy-spins the calling thread for the cost of one call of that kind, and counts it. */
void fake_cost(enum fake_cost_kind kind);

/* launch.c: CUDA_LAUNCH_BLOCKING (cuInit): "1", every launch returns once its kernel has run; "0" or
 * unset, launches are asynchronous; anything else: 0 after one line, else -1. */
int fake_launch_blocking_config(void);
extern int fake_launch_blocking;

/* streams.c: streams in stream order, each with a bounded queue of pending work. Every value is a
 * virtual time of the stream's device context. */
#define FAKE_STREAM_QUEUE 1024 /* launches pending on one stream before a launch blocks */
struct fake_graph;
struct fake_stream {
  uint32_t magic; /* FAKE_STREAM_MAGIC while alive */
  CUdevice dev;
  int kind; /* FAKE_STREAM_LEGACY, _BLOCKING (created with flags 0, per-thread) or _NON_BLOCKING */
  pthread_mutex_t mu;
  uint64_t tail;                          /* atomic: when its last work (or the event it waits for) is done */
  uint64_t pending[FAKE_STREAM_QUEUE];    /* virtual times its pending launches are done at */
  uint64_t pending_sm[FAKE_STREAM_QUEUE]; /* the SM-time each counts for (MPS) */
  unsigned head, count;
  struct fake_graph* capture; /* the graph being captured, or NULL */
};
enum { FAKE_STREAM_LEGACY, FAKE_STREAM_BLOCKING, FAKE_STREAM_NON_BLOCKING };
#define FAKE_STREAM_MAGIC 0x4d525453u
/* The stream a call names: NULL is the context's legacy stream, or with per_thread the calling
 * thread's own; CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name those. */
CUresult fake_stream_of(CUstream s, int per_thread, struct fake_stream** out);
/* Queues duration ns of work (nodes kernels, width percent of the SMs) on the stream, or appends
 * it to the graph it captures; blocks while FAKE_STREAM_QUEUE launches are pending on it, and with
 * CUDA_LAUNCH_BLOCKING=1 until the work has run. */
CUresult fake_stream_enqueue(struct fake_stream* s, uint64_t duration, unsigned width, unsigned nodes);
/* The point work queued on the stream now would wait for: its tail, and for the legacy stream
 * the other blocking streams' work, for a blocking stream the legacy stream's (CUDA's rules). */
uint64_t fake_stream_point(struct fake_stream* s);
/* Waits for the stream's work (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED while it captures). */
CUresult fake_stream_wait(struct fake_stream* s);
/* Work queued on the stream from now on starts no earlier than virtual time cv (cuStreamWaitEvent). */
void fake_stream_after(struct fake_stream* s, uint64_t cv);
/* The end of the last work this process put on dev. */
uint64_t fake_device_tail(CUdevice dev);

/* graphs.c */
struct fake_graph {
  uint32_t magic; /* FAKE_GRAPH_MAGIC, or FAKE_EXEC_MAGIC for an instantiated graph */
  unsigned nodes;
  unsigned width; /* percent of the SMs: its widest kernel's */
  uint64_t total; /* ns: the sum of its kernels */
};
#define FAKE_GRAPH_MAGIC 0x48505247u
#define FAKE_EXEC_MAGIC 0x43584547u

/* procaddr.c */
void* fake_proc_lookup(const char* name);

#endif /* GPUFRAC_FAKE_CUDA_INTERNAL_H */
