/* cuGetProcAddress (CUDA 11.3 form) and cuGetProcAddress_v2 (CUDA 12, with symbolStatus): a
 * base name, the caller's CUDA version and the per-thread-stream flag select the exported
 * function, with the driver API's rules: "_v2" from the version that introduced it, "_ptsz"
 * with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, and VERSION_NOT_SUFFICIENT for a function
 * newer than the caller. With GPUFRAC_FAKE_CUDA_DISTINCT_PROCS=1 a few functions are handed out
 * at addresses other than their exported symbols (as a driver with an internal table may do).
 * Also the legacy (pre-3.2) functions and the error strings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

#undef cuMemAlloc
#undef cuMemFree
#undef cuMemGetInfo
#undef cuDeviceTotalMem
#undef cuDevicePrimaryCtxRelease
#undef cuGetProcAddress
#undef cuLaunchKernel
#undef cuLaunchKernelEx
#undef cuLaunchCooperativeKernel
#undef cuGraphLaunch
#undef cuStreamSynchronize
#undef cuStreamQuery
#undef cuStreamWaitEvent
#undef cuEventRecord
#undef cuStreamBeginCapture
#undef cuStreamEndCapture
#undef cuStreamIsCapturing
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuGraphInstantiate
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemsetD8

/* Legacy 32-bit entry points: present so that old versions resolve to them; not supported. */
FAKE_API CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  return (void)dptr, (void)bytesize, CUDA_ERROR_NOT_SUPPORTED;
}
FAKE_API CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  return (void)dptr, CUDA_ERROR_NOT_SUPPORTED;
}
FAKE_API CUresult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total_bytes) {
  return (void)free_bytes, (void)total_bytes, CUDA_ERROR_NOT_SUPPORTED;
}
FAKE_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}
FAKE_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags);
CUresult cuStreamBeginCapture(CUstream stream);
CUresult cuStreamBeginCapture_ptsz(CUstream stream);

/* Stand-ins at other addresses (GPUFRAC_FAKE_CUDA_DISTINCT_PROCS=1). */
static CUresult alias_alloc(CUdeviceptr* p, size_t n) {
  return cuMemAlloc_v2(p, n);
}
static CUresult alias_free(CUdeviceptr p) {
  return cuMemFree_v2(p);
}
static CUresult alias_meminfo(size_t* f, size_t* t) {
  return cuMemGetInfo_v2(f, t);
}
static CUresult alias_alloc_async_ptsz(CUdeviceptr* p, size_t n, CUstream s) {
  return cuMemAllocAsync_ptsz(p, n, s);
}
static CUresult alias_free_async_ptsz(CUdeviceptr p, CUstream s) {
  return cuMemFreeAsync_ptsz(p, s);
}
static CUresult alias_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned shmem, CUstream s, void** params, void** extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
static CUresult alias_launch_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  return cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
static CUresult alias_graph_launch(CUgraphExec e, CUstream s) {
  return cuGraphLaunch(e, s);
}

struct proc {
  const char* name;
  void* fn;
  int since;
  void* alias;
};

#define P(name, since) \
  { #name, (void*)name, since, NULL }
static const struct proc g_procs[] = {
    P(cuInit, 2000),
    P(cuDriverGetVersion, 2020),
    P(cuGetErrorString, 6000),
    P(cuGetErrorName, 6000),
    P(cuDeviceGet, 2000),
    P(cuDeviceGetCount, 2000),
    P(cuDeviceGetName, 2000),
    P(cuDeviceGetUuid, 9020),
    P(cuDeviceGetUuid_v2, 11040),
    P(cuDeviceTotalMem_v2, 3020),
    P(cuCtxCreate_v2, 3020),
    P(cuCtxDestroy_v2, 4000),
    P(cuCtxSetCurrent, 4000),
    P(cuCtxGetCurrent, 4000),
    P(cuCtxGetDevice, 2000),
    P(cuCtxPushCurrent_v2, 4000),
    P(cuCtxPopCurrent_v2, 4000),
    P(cuCtxSynchronize, 2000),
    P(cuDevicePrimaryCtxRetain, 7000),
    P(cuDevicePrimaryCtxRelease, 7000),
    P(cuDevicePrimaryCtxRelease_v2, 11000),
    P(cuMemGetInfo, 2000),
    {"cuMemGetInfo_v2", (void*)cuMemGetInfo_v2, 3020, (void*)alias_meminfo},
    P(cuMemAlloc, 2000),
    {"cuMemAlloc_v2", (void*)cuMemAlloc_v2, 3020, (void*)alias_alloc},
    P(cuMemAllocPitch_v2, 3020),
    P(cuMemFree, 2000),
    {"cuMemFree_v2", (void*)cuMemFree_v2, 3020, (void*)alias_free},
    P(cuMemAllocManaged, 6000),
    P(cuMemCreate, 10020),
    P(cuMemRelease, 10020),
    P(cuDeviceGetDefaultMemPool, 11020),
    P(cuDeviceGetMemPool, 11020),
    P(cuMemPoolCreate, 11020),
    P(cuMemPoolDestroy, 11020),
    P(cuMemAllocAsync, 11020),
    {"cuMemAllocAsync_ptsz", (void*)cuMemAllocAsync_ptsz, 11020, (void*)alias_alloc_async_ptsz},
    P(cuMemAllocFromPoolAsync, 11020),
    P(cuMemAllocFromPoolAsync_ptsz, 11020),
    P(cuMemFreeAsync, 11020),
    {"cuMemFreeAsync_ptsz", (void*)cuMemFreeAsync_ptsz, 11020, (void*)alias_free_async_ptsz},
    P(cuArrayCreate_v2, 3020),
    P(cuArray3DCreate_v2, 3020),
    P(cuArrayDestroy, 2000),
    P(cuMipmappedArrayCreate, 5000),
    P(cuMipmappedArrayDestroy, 5000),
    P(cuGetProcAddress, 11030),
    P(cuGetProcAddress_v2, 12000),
    P(cuModuleLoad, 2000),
    P(cuModuleLoadData, 2000),
    P(cuModuleUnload, 2000),
    P(cuModuleGetFunction, 2000),
    {"cuLaunchKernel", (void*)cuLaunchKernel, 4000, (void*)alias_launch},
    {"cuLaunchKernel_ptsz", (void*)cuLaunchKernel_ptsz, 7000, (void*)alias_launch_ptsz},
    P(cuLaunchKernelEx, 11060),
    P(cuLaunchKernelEx_ptsz, 11060),
    P(cuLaunchCooperativeKernel, 9000),
    P(cuLaunchCooperativeKernel_ptsz, 9000),
    P(cuLaunchCooperativeKernelMultiDevice, 9000),
    P(cuStreamCreate, 2000),
    P(cuStreamDestroy_v2, 4000),
    P(cuStreamSynchronize, 2000),
    P(cuStreamSynchronize_ptsz, 7000),
    P(cuStreamQuery, 2000),
    P(cuStreamQuery_ptsz, 7000),
    P(cuStreamWaitEvent, 3020),
    P(cuStreamWaitEvent_ptsz, 7000),
    P(cuEventCreate, 2000),
    P(cuEventDestroy_v2, 4000),
    P(cuEventRecord, 2000),
    P(cuEventRecord_ptsz, 7000),
    P(cuEventQuery, 2000),
    P(cuEventSynchronize, 2000),
    P(cuEventElapsedTime, 2000),
    P(cuStreamBeginCapture, 10000),
    P(cuStreamBeginCapture_ptsz, 10000),
    P(cuStreamBeginCapture_v2, 10010),
    P(cuStreamBeginCapture_v2_ptsz, 10010),
    P(cuStreamEndCapture, 10000),
    P(cuStreamEndCapture_ptsz, 10000),
    P(cuStreamIsCapturing, 10000),
    P(cuStreamIsCapturing_ptsz, 10000),
    P(cuGraphInstantiate_v2, 11000),
    P(cuGraphInstantiateWithFlags, 11040),
    {"cuGraphLaunch", (void*)cuGraphLaunch, 10000, (void*)alias_graph_launch},
    P(cuGraphLaunch_ptsz, 10000),
    P(cuMemcpyHtoD_v2, 3020),
    P(cuMemcpyDtoH_v2, 3020),
    P(cuMemsetD8_v2, 3020),
    P(cuCheckpointProcessGetState, 12080),
    P(cuCheckpointProcessGetRestoreThreadId, 12080),
    P(cuCheckpointProcessLock, 12080),
    P(cuCheckpointProcessCheckpoint, 12080),
    P(cuCheckpointProcessRestore, 12080),
    P(cuCheckpointProcessUnlock, 12080),
    P(cuGraphExecDestroy, 10000),
    P(cuGraphDestroy, 10000),
};
#undef P

struct versioned {
  const char* base;
  int v2_since;
};
static const struct versioned g_v2[] = {
    {"cuDeviceTotalMem", 3020}, {"cuCtxCreate", 3020},           {"cuCtxDestroy", 4000},
    {"cuCtxPushCurrent", 4000}, {"cuCtxPopCurrent", 4000},       {"cuMemGetInfo", 3020},
    {"cuMemAlloc", 3020},       {"cuMemAllocPitch", 3020},       {"cuMemFree", 3020},
    {"cuArrayCreate", 3020},    {"cuArray3DCreate", 3020},       {"cuDevicePrimaryCtxRelease", 11000},
    {"cuDeviceGetUuid", 11040}, {"cuGetProcAddress", 12000},     {"cuStreamDestroy", 4000},
    {"cuEventDestroy", 4000},   {"cuStreamBeginCapture", 10010}, {"cuGraphInstantiate", 11000},
    {"cuMemcpyHtoD", 3020},     {"cuMemcpyDtoH", 3020},          {"cuMemsetD8", 3020},
};
static const char* const g_per_thread[] = {"cuMemAllocAsync",    "cuMemAllocFromPoolAsync", "cuMemFreeAsync",
                                           "cuLaunchKernel",     "cuLaunchKernelEx",        "cuLaunchCooperativeKernel",
                                           "cuGraphLaunch",      "cuStreamSynchronize",     "cuStreamQuery",
                                           "cuStreamWaitEvent",  "cuEventRecord",           "cuStreamBeginCapture",
                                           "cuStreamEndCapture", "cuStreamIsCapturing"};

static const struct proc* find(const char* name) {
  for (size_t i = 0; i < sizeof g_procs / sizeof g_procs[0]; i++) {
    if (strcmp(g_procs[i].name, name) == 0) return &g_procs[i];
  }
  return NULL;
}

void* fake_proc_lookup(const char* name) {
  const struct proc* p = find(name);
  return p != NULL ? p->fn : NULL;
}

/* The exported name a request means. */
static void resolve_name(const char* symbol, int version, cuuint64_t flags, char* out, size_t len) {
  const char* v2 = "";
  const char* pt = "";
  for (size_t i = 0; i < sizeof g_v2 / sizeof g_v2[0]; i++) {
    if (strcmp(g_v2[i].base, symbol) == 0 && version >= g_v2[i].v2_since) v2 = "_v2";
  }
  for (size_t i = 0; i < sizeof g_per_thread / sizeof g_per_thread[0]; i++) {
    if (strcmp(g_per_thread[i], symbol) == 0 && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) pt = "_ptsz";
  }
  snprintf(out, len, "%s%s%s", symbol, v2, pt);
}

static CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult* status) {
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  char name[128];
  resolve_name(symbol, version, flags, name, sizeof name);
  const struct proc* p = find(name);
  *pfn = NULL;
  if (p != NULL && version < p->since) st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  if (p != NULL && version >= p->since) {
    const char* distinct = getenv("GPUFRAC_FAKE_CUDA_DISTINCT_PROCS");
    *pfn = p->alias != NULL && distinct != NULL && strcmp(distinct, "1") == 0 ? p->alias : p->fn;
    st = CU_GET_PROC_ADDRESS_SUCCESS;
  }
  if (status != NULL) *status = st;
  return st == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

FAKE_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  return lookup(symbol, pfn, cuda_version, flags, NULL);
}

FAKE_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult* status) {
  return lookup(symbol, pfn, cuda_version, flags, status);
}

static const struct {
  CUresult code;
  const char* name;
  const char* text;
} g_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
     "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_TIMEOUT, "CUDA_ERROR_TIMEOUT", "the wait operation has timed out"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation is not permitted in the current state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_MPS_CONNECTION_FAILED, "CUDA_ERROR_MPS_CONNECTION_FAILED",
     "MPS client failed to connect to the MPS control daemon or the MPS server"},
    {CUDA_ERROR_MPS_SERVER_NOT_READY, "CUDA_ERROR_MPS_SERVER_NOT_READY",
     "the MPS server is not ready to accept new MPS client requests"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult describe(CUresult error, const char** str, int want_name) {
  if (str == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++) {
    if (g_errors[i].code == error) {
      *str = want_name ? g_errors[i].name : g_errors[i].text;
      return CUDA_SUCCESS;
    }
  }
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

FAKE_API CUresult cuGetErrorString(CUresult error, const char** str) {
  return describe(error, str, 0);
}
FAKE_API CUresult cuGetErrorName(CUresult error, const char** str) {
  return describe(error, str, 1);
}
