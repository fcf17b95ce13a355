/* The wrappers by name and by the real function they stand in for: what dlsym and
 * cuGetProcAddress hand out instead of the driver's own functions. */
#include <string.h>

#include "gf_exports.h"

struct gf_wrapper {
  const char* name;
  void* fn;
  int real; /* enum gf_cuda_fn, or -1 for an NVML function */
};

#define GF_CU(name) \
  { #name, (void*)name, GF_##name }
#define GF_NV(name) \
  { #name, (void*)name, -1 }
static const struct gf_wrapper g_wrappers[] = {
    GF_CU(cuMemAlloc_v2),
    GF_CU(cuMemAllocPitch_v2),
    GF_CU(cuMemAllocManaged),
    GF_CU(cuMemFree_v2),
    GF_CU(cuMemCreate),
    GF_CU(cuMemRelease),
    GF_CU(cuMemAllocAsync),
    GF_CU(cuMemAllocAsync_ptsz),
    GF_CU(cuMemAllocFromPoolAsync),
    GF_CU(cuMemAllocFromPoolAsync_ptsz),
    GF_CU(cuMemFreeAsync),
    GF_CU(cuMemFreeAsync_ptsz),
    GF_CU(cuMemPoolCreate),
    GF_CU(cuMemPoolDestroy),
    GF_CU(cuDeviceGetDefaultMemPool),
    GF_CU(cuDeviceGetMemPool),
    GF_CU(cuArrayCreate_v2),
    GF_CU(cuArray3DCreate_v2),
    GF_CU(cuMipmappedArrayCreate),
    GF_CU(cuArrayDestroy),
    GF_CU(cuMipmappedArrayDestroy),
    GF_CU(cuMemGetInfo_v2),
    GF_CU(cuDeviceTotalMem_v2),
    GF_CU(cuGetProcAddress),
    GF_CU(cuGetProcAddress_v2),
    GF_CU(cuLaunchKernel),
    GF_CU(cuLaunchKernel_ptsz),
    GF_CU(cuLaunchKernelEx),
    GF_CU(cuLaunchKernelEx_ptsz),
    GF_CU(cuLaunchCooperativeKernel),
    GF_CU(cuLaunchCooperativeKernel_ptsz),
    GF_CU(cuLaunchCooperativeKernelMultiDevice),
    GF_CU(cuGraphLaunch),
    GF_CU(cuGraphLaunch_ptsz),
    GF_CU(cuCtxSynchronize),
    GF_CU(cuStreamSynchronize),
    GF_CU(cuStreamSynchronize_ptsz),
    GF_CU(cuEventSynchronize),
    GF_CU(cuStreamBeginCapture),
    GF_CU(cuStreamBeginCapture_ptsz),
    GF_CU(cuStreamBeginCapture_v2),
    GF_CU(cuStreamBeginCapture_v2_ptsz),
    GF_CU(cuStreamEndCapture),
    GF_CU(cuStreamEndCapture_ptsz),
    GF_NV(nvmlDeviceGetMemoryInfo),
    GF_NV(nvmlDeviceGetMemoryInfo_v2),
};
#undef GF_CU
#undef GF_NV
#define GF_WRAPPER_COUNT (sizeof g_wrappers / sizeof g_wrappers[0])

void* gf_wrapper_by_name(const char* name) {
  if (name == NULL) return NULL;
  int cu = name[0] == 'c' && name[1] == 'u';
  if (!cu && strncmp(name, "nvml", 4) != 0) return NULL;
  for (size_t i = 0; i < GF_WRAPPER_COUNT; i++) {
    if (strcmp(g_wrappers[i].name, name) == 0) return g_wrappers[i].fn;
  }
  return NULL;
}

void* gf_wrapper_by_real(void* real) {
  if (real == NULL) return NULL;
  for (size_t i = 0; i < GF_WRAPPER_COUNT; i++) {
    if (g_wrappers[i].real >= 0 && gf_cuda((enum gf_cuda_fn)g_wrappers[i].real) == real) return g_wrappers[i].fn;
  }
  return NULL;
}
