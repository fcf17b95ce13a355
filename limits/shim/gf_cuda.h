/* The subset of the CUDA driver and NVML ABI the shim touches, declared here so the shim builds
 * without NVIDIA headers. Values and layouts follow cuda.h / nvml.h of CUDA 12 (x86-64, aarch64). */
#ifndef GPUFRAC_SHIM_GF_CUDA_H
#define GPUFRAC_SHIM_GF_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_ILLEGAL_STATE 401
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_SUPPORTED 801

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef uint64_t cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUmemPoolHandle_st* CUmemoryPool;
typedef struct CUarray_st* CUarray;
typedef struct CUmipmappedArray_st* CUmipmappedArray;
typedef struct CUevent_st* CUevent;
typedef struct CUfunc_st* CUfunction;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
typedef int CUstreamCaptureMode;
#define CU_EVENT_BLOCKING_SYNC 0x1
#define CU_EVENT_DISABLE_TIMING 0x2

/* cuLaunchKernelEx's configuration and a cooperative multi-device launch's entries: the shim
 * reads the stream from them. */
typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void* attrs;
  unsigned int numAttrs;
} CUlaunchConfig;
typedef struct CUDA_LAUNCH_PARAMS_st {
  CUfunction function;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void** kernelParams;
} CUDA_LAUNCH_PARAMS;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;

typedef int CUarray_format;
typedef struct CUDA_ARRAY_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  CUarray_format Format;
  unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;
typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  size_t Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;
#define CUDA_ARRAY3D_LAYERED 0x01u
#define CUDA_ARRAY3D_CUBEMAP 0x04u
#define CUDA_ARRAY3D_SPARSE 0x40u
#define CUDA_ARRAY3D_DEFERRED_MAPPING 0x80u

/* The common prefix of CUmemAllocationProp and CUmemPoolProps: type, handle types, location.
 * The shim reads only these fields of the caller's (larger) structure. */
#define CU_MEM_LOCATION_TYPE_DEVICE 1
typedef struct CUmemLocation_st {
  int type;
  int id;
} CUmemLocation;
typedef struct gf_mem_props_prefix {
  int type;
  int handle_types;
  CUmemLocation location;
} gf_mem_props_prefix;
typedef struct CUmemAllocationProp_st CUmemAllocationProp;
typedef struct CUmemPoolProps_st CUmemPoolProps;

typedef int CUdriverProcAddressQueryResult;
#define CU_GET_PROC_ADDRESS_SUCCESS 0
#define CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND 1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (1ull << 1)

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_LIBRARY_NOT_FOUND 12
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;
typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

#endif /* GPUFRAC_SHIM_GF_CUDA_H */
