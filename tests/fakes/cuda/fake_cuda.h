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

/* gpu.c: the simulated GPU shared by the host's processes (fake_gpu.h). */
struct fake_run {
  uint64_t start, end; /* CLOCK_MONOTONIC ns */
};
uint64_t fake_now_ns(void);
void fake_sleep_until(uint64_t t);
struct fake_gpu_file* fake_gpu(void);
/* The simulated device (index in the shared file) of a CUDA device of this process. */
int fake_gpu_device(CUdevice dev);
/* Puts duration ns of work on the device's timeline, starting no earlier than not_before. */
struct fake_run fake_gpu_submit(int gdev, uint64_t duration, uint64_t not_before);

/* streams.c: streams in stream order, each with a bounded queue of pending work. */
#define FAKE_STREAM_QUEUE 1024 /* launches pending on one stream before a launch blocks */
struct fake_graph;
struct fake_stream {
  uint32_t magic; /* FAKE_STREAM_MAGIC while alive */
  CUdevice dev;
  int gdev;
  pthread_mutex_t mu;
  uint64_t tail; /* atomic: when its last work ends */
  uint64_t pending[FAKE_STREAM_QUEUE];
  unsigned head, count;
  struct fake_graph* capture; /* the graph being captured, or NULL */
};
#define FAKE_STREAM_MAGIC 0x4d525453u
/* The stream a call names: NULL is the context's legacy stream, or with per_thread the calling
 * thread's own; CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name those. */
CUresult fake_stream_of(CUstream s, int per_thread, struct fake_stream** out);
/* Queues duration ns of work (nodes kernels) on the stream, or appends it to the graph it
 * captures; blocks while FAKE_STREAM_QUEUE launches are pending on it. */
CUresult fake_stream_enqueue(struct fake_stream* s, uint64_t duration, unsigned nodes);
/* Waits for the stream's work (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED while it captures). */
CUresult fake_stream_wait(struct fake_stream* s);
/* Work queued on the stream from now on starts no earlier than t (cuStreamWaitEvent). */
void fake_stream_after(struct fake_stream* s, uint64_t t);
/* The end of the last work this process put on dev. */
uint64_t fake_device_tail(CUdevice dev);

/* graphs.c */
struct fake_graph {
  uint32_t magic; /* FAKE_GRAPH_MAGIC, or FAKE_EXEC_MAGIC for an instantiated graph */
  unsigned nodes;
  uint64_t total; /* ns: the sum of its kernels */
};
#define FAKE_GRAPH_MAGIC 0x48505247u
#define FAKE_EXEC_MAGIC 0x43584547u

/* procaddr.c */
void* fake_proc_lookup(const char* name);

#endif /* GPUFRAC_FAKE_CUDA_INTERNAL_H */
