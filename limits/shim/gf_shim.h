/* Process-wide state of the shim and the helpers every interceptor uses: the configuration and this
 * process's slot (state.c), the real libraries, device lookup, messages. The lowest layer of the
 * shim's process state: the memory accounting (gf_charge.h) and the compute gate (gf_compute.h) sit
 * above it, fork.c above both (limits/README.md "Source map"). Internal (hidden). */
#ifndef GPUFRAC_SHIM_GF_SHIM_H
#define GPUFRAC_SHIM_GF_SHIM_H

#include <stdint.h>

#include "gf_config.h"
#include "gf_cuda.h"
#include "gf_region.h"
#include "gf_table.h"

#define GF_EXPORT __attribute__((visibility("default")))
#define GF_LIKELY(x) __builtin_expect(!!(x), 1)
#define GF_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- state.c: configuration, region and this process's slot ---- */
enum gf_mode {
  GF_MODE_INERT = 1,      /* no limit file: every call goes straight to the driver */
  GF_MODE_ACTIVE = 2,     /* limits apply; limited devices refuse when the region is unusable */
  GF_MODE_REFUSE_ALL = 3, /* the limit file is unreadable or invalid: counted allocations refused */
};

struct gf_shim {
  struct gf_config cfg;
  struct gpufrac_region* region; /* NULL in ACTIVE mode: the region was refused */
  char limit_path[GF_PATH_MAX];
};
extern struct gf_shim gf_g;

/* Loads the configuration on first use (thread-safe) and returns the mode. */
int gf_mode(void);
/* This process's slot, claimed on first use (reclaiming dead slots first); NULL if none. */
struct gpufrac_slot* gf_slot(void);
/* This process's slot if it has claimed one, else NULL (claims nothing). */
struct gpufrac_slot* gf_slot_if_claimed(void);
/* This process's identity: gpufrac_owner(pid, start time, 0). */
uint64_t gf_self(void);
/* Reclaims dead slots with the thorough /proc check (refusal path). Returns slots reclaimed. */
unsigned gf_reclaim_thorough(void);
/* Reclaims dead slots before reporting memory: the thorough check, at most every 100 ms. */
void gf_reclaim_for_report(void);
/* fork.c's handlers: the claim lock held across fork; the child forgets its parent's identity. */
void gf_state_before_fork(void);
void gf_state_after_fork_parent(void);
void gf_state_after_fork_child(void);

/* ---- real.c: the real driver and NVML ---- */
/* clang-format off */
#define GF_CUDA_FUNCS(X)                                                                             \
  X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemAllocManaged) X(cuMemFree_v2)                        \
  X(cuMemCreate) X(cuMemRelease)                                                                     \
  X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync)                              \
  X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)                           \
  X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuDeviceGetDefaultMemPool) X(cuDeviceGetMemPool)          \
  X(cuArrayCreate_v2) X(cuArray3DCreate_v2) X(cuMipmappedArrayCreate) X(cuArrayDestroy)              \
  X(cuMipmappedArrayDestroy)                                                                         \
  X(cuMemGetInfo_v2) X(cuDeviceTotalMem_v2) X(cuGetProcAddress) X(cuGetProcAddress_v2)               \
  /* launches (gated), synchronisation and capture (compute shares, gf_compute.h): */                \
  X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)              \
  X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz)                                     \
  X(cuLaunchCooperativeKernelMultiDevice) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)                     \
  X(cuCtxSynchronize) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) X(cuEventSynchronize)       \
  X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz) X(cuStreamBeginCapture_v2)                    \
  X(cuStreamBeginCapture_v2_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz)                   \
  /* not wrapped, used by the shim: */                                                               \
  X(cuCtxGetDevice) X(cuDeviceGetUuid) X(cuDeviceGetUuid_v2) X(cuDeviceGetCount)                     \
  X(cuEventCreate) X(cuEventDestroy_v2) X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventQuery)          \
  X(cuStreamIsCapturing) X(cuStreamIsCapturing_ptsz)
/* clang-format on */
#define GF_NVML_FUNCS(X) X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetMemoryInfo_v2) X(nvmlDeviceGetUUID)

#define GF_ENUM_ITEM(name) GF_##name,
enum gf_cuda_fn { GF_CUDA_FUNCS(GF_ENUM_ITEM) GF_CUDA_FN_COUNT };
enum gf_nvml_fn { GF_NVML_FUNCS(GF_ENUM_ITEM) GF_NVML_FN_COUNT };
#undef GF_ENUM_ITEM

extern const char* const gf_cuda_names[GF_CUDA_FN_COUNT];
/* The real driver function, loading libcuda.so.1 on first use; NULL when missing. */
void* gf_cuda(enum gf_cuda_fn f);
/* CUresult for a missing real function: the driver could not be loaded, or lacks the symbol. */
CUresult gf_cuda_missing(void);
void* gf_nvml(enum gf_nvml_fn f);
nvmlReturn_t gf_nvml_missing(void);
/* glibc's dlsym, found with dlvsym(RTLD_NEXT, ...); never the shim's own. */
extern void* (*gf_real_dlsym_fn)(void*, const char*);
void gf_resolve_real_dlsym(void);
/* Called in a fork child: the loaders may have been mid-flight in another thread. */
void gf_real_after_fork(void);

/* ---- device.c: which limit applies ---- */
#define GF_UNLIMITED (-1)
/* Limit index of a CUDA device, or GF_UNLIMITED; a CUresult error in *err when its UUID cannot
 * be read (then returns GF_UNLIMITED and the caller fails the call with *err). */
int gf_device_index(CUdevice dev, CUresult* err);
/* Limit index for the calling thread's current device; err as above, or the driver's error when
 * the thread has no context. With one CUDA device in the process every context is on it, and the
 * index is known without asking the driver (the call that follows fails without a context). */
int gf_current_index(CUresult* err);
/* Limit index of an NVML device handle, or GF_UNLIMITED. */
int gf_nvml_index(nvmlDevice_t dev);

/* ---- log.c ---- */
/* Writes one "gpufrac: ..." line on stderr the first time *once is seen 0. */
void gf_log_once(int* once, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* GPUFRAC_SHIM_GF_SHIM_H */
