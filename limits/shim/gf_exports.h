/* Every symbol the shim exports (exports.map lists the same names; a test checks the set). */
#ifndef GPUFRAC_SHIM_GF_EXPORTS_H
#define GPUFRAC_SHIM_GF_EXPORTS_H

#include "gf_cuda.h"
#include "gf_shim.h"

GF_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
GF_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                      unsigned int element_size);
GF_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags);
GF_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr);
GF_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                               unsigned long long flags);
GF_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
GF_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream);
GF_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream);
GF_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream);
GF_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream);
GF_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
GF_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
GF_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props);
GF_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool);
GF_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev);
GF_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev);
GF_EXPORT CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc);
GF_EXPORT CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc);
GF_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                          unsigned int levels);
GF_EXPORT CUresult cuArrayDestroy(CUarray array);
GF_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray array);
GF_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes);
GF_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev);
GF_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags);
GF_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult* status);
GF_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shmem, CUstream s, void** params, void** extra);
GF_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                       unsigned bz, unsigned shmem, CUstream s, void** params, void** extra);
GF_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra);
GF_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** params, void** extra);
GF_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                             unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params);
GF_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                  unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params);
GF_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* list, unsigned n, unsigned flags);
GF_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s);
GF_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s);
GF_EXPORT CUresult cuCtxSynchronize(void);
GF_EXPORT CUresult cuStreamSynchronize(CUstream s);
GF_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s);
GF_EXPORT CUresult cuEventSynchronize(CUevent ev);
GF_EXPORT CUresult cuStreamBeginCapture(CUstream s);
GF_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s);
GF_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode);
GF_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
GF_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph* graph);
GF_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph* graph);
GF_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
GF_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);

/* ---- intercept_table.c: name -> wrapper, for dlsym and cuGetProcAddress ---- */
/* The table names every wrapper above, cuGetProcAddress's own included, and cuGetProcAddress looks
 * wrappers up in it: the one pair of files in the shim that refer to each other. */
void* gf_wrapper_by_name(const char* name);
/* The wrapper standing in for a real driver function pointer, or NULL. */
void* gf_wrapper_by_real(void* real);

#endif /* GPUFRAC_SHIM_GF_EXPORTS_H */
