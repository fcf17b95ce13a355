/* Internal state of the fake libcuda.so.1 (see README.md). */
#ifndef GPUFRAC_FAKE_CUDA_INTERNAL_H
#define GPUFRAC_FAKE_CUDA_INTERNAL_H

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

/* procaddr.c */
void* fake_proc_lookup(const char* name);

#endif /* GPUFRAC_FAKE_CUDA_INTERNAL_H */
