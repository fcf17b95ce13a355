/* cuGetProcAddress and cuGetProcAddress_v2, how the CUDA runtime finds every driver function.
 * The driver resolves the request (base name, CUDA version, per-thread-stream flag); when its
 * answer is a function the shim wraps, the wrapper is returned instead. The answer is matched by
 * address first; a driver whose table holds other addresses than its exported symbols is
 * matched by the driver API's naming rules (cudaTypedefs.h): "_v2" from CUDA 3.2 (12.0 for
 * cuGetProcAddress itself) and "_ptsz" with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.
 * A version older than a function's "_v2" gets the driver's legacy function, which is not
 * counted (cuStreamBeginCapture's legacy form is wrapped: capture is tracked either way). A lookup of
 * "cuGetProcAddress" returns the shim's own, so later lookups stay here. */
#include <stdio.h>
#include <string.h>

#include "gf_exports.h"

struct gf_proc_rule {
  const char* base;
  int v2_since;   /* CUDA version from which the base name means base_v2; 0: no _v2 */
  int per_thread; /* has a _ptsz variant */
};

static const struct gf_proc_rule g_rules[] = {
    {"cuMemAlloc", 3020, 0},
    {"cuMemAllocPitch", 3020, 0},
    {"cuMemFree", 3020, 0},
    {"cuMemGetInfo", 3020, 0},
    {"cuDeviceTotalMem", 3020, 0},
    {"cuArrayCreate", 3020, 0},
    {"cuArray3DCreate", 3020, 0},
    {"cuMemAllocManaged", 0, 0},
    {"cuMemCreate", 0, 0},
    {"cuMemRelease", 0, 0},
    {"cuMipmappedArrayCreate", 0, 0},
    {"cuArrayDestroy", 0, 0},
    {"cuMipmappedArrayDestroy", 0, 0},
    {"cuMemAllocAsync", 0, 1},
    {"cuMemAllocFromPoolAsync", 0, 1},
    {"cuMemFreeAsync", 0, 1},
    {"cuMemPoolCreate", 0, 0},
    {"cuMemPoolDestroy", 0, 0},
    {"cuDeviceGetDefaultMemPool", 0, 0},
    {"cuDeviceGetMemPool", 0, 0},
    {"cuGetProcAddress", 12000, 0},
    {"cuLaunchKernel", 0, 1},
    {"cuLaunchKernelEx", 0, 1},
    {"cuLaunchCooperativeKernel", 0, 1},
    {"cuLaunchCooperativeKernelMultiDevice", 0, 0},
    {"cuGraphLaunch", 0, 1},
    {"cuCtxSynchronize", 0, 0},
    {"cuStreamSynchronize", 0, 1},
    {"cuEventSynchronize", 0, 0},
    {"cuStreamBeginCapture", 10010, 1},
    {"cuStreamEndCapture", 0, 1},
};

static void* by_rule(const char* symbol, void* real, int cuda_version, cuuint64_t flags) {
  for (size_t i = 0; i < sizeof g_rules / sizeof g_rules[0]; i++) {
    const struct gf_proc_rule* r = &g_rules[i];
    if (strcmp(r->base, symbol) != 0) continue;
    /* Older than its _v2: the legacy function, wrapped only where the shim wraps that too. */
    int v2 = r->v2_since != 0 && cuda_version >= r->v2_since;
    char name[96];
    snprintf(name, sizeof name, "%s%s%s", r->base, v2 ? "_v2" : "",
             r->per_thread && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? "_ptsz" : "");
    void* w = gf_wrapper_by_name(name);
    return w != NULL ? w : real;
  }
  return real;
}

static void* substitute(const char* symbol, void* real, int cuda_version, cuuint64_t flags) {
  if (symbol == NULL || real == NULL) return real;
  if (gf_mode() == GF_MODE_INERT && strcmp(symbol, "cuGetProcAddress") != 0) return real;
  void* w = gf_wrapper_by_real(real);
  return w != NULL ? w : by_rule(symbol, real, cuda_version, flags);
}

GF_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  typedef CUresult (*gpa_fn)(const char*, void**, int, cuuint64_t);
  gpa_fn real = (gpa_fn)gf_cuda(GF_cuGetProcAddress);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  CUresult rc = real(symbol, pfn, cuda_version, flags);
  if (rc == CUDA_SUCCESS && pfn != NULL) *pfn = substitute(symbol, *pfn, cuda_version, flags);
  return rc;
}

GF_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult* status) {
  typedef CUresult (*gpa2_fn)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  gpa2_fn real = (gpa2_fn)gf_cuda(GF_cuGetProcAddress_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  CUresult rc = real(symbol, pfn, cuda_version, flags, status);
  if (rc == CUDA_SUCCESS && pfn != NULL) *pfn = substitute(symbol, *pfn, cuda_version, flags);
  return rc;
}
