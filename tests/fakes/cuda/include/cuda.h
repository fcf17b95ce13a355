/* The subset of NVIDIA's cuda.h (CUDA 12 driver API) that the fake libcuda.so.1 implements, with
 * the same names, values, layouts and version macros, so test programs read like real CUDA
 * programs: cuMemAlloc means cuMemAlloc_v2, cuGetProcAddress means cuGetProcAddress_v2, and with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM the stream-ordered calls mean their _ptsz variants. */
#ifndef GPUFRAC_FAKE_CUDA_H
#define GPUFRAC_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDA_VERSION 12040

typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_OPERATING_SYSTEM = 304,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_ILLEGAL_STATE = 401,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_MPS_CONNECTION_FAILED = 805,
  CUDA_ERROR_MPS_SERVER_NOT_READY = 807,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_TIMEOUT = 909,
  CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned int CUdeviceptr_v1;
typedef uint64_t cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUmemPoolHandle_st* CUmemoryPool;
typedef struct CUarray_st* CUarray;
typedef struct CUevent_st* CUevent;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
typedef struct CUgraphNode_st* CUgraphNode;
typedef struct CUmipmappedArray_st* CUmipmappedArray;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;

#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)
#define CU_STREAM_DEFAULT 0x0
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DEFAULT 0x0
#define CU_EVENT_BLOCKING_SYNC 0x1
#define CU_EVENT_DISABLE_TIMING 0x2

typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;
typedef enum CUstreamCaptureMode_enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;

typedef struct CUlaunchAttribute_st CUlaunchAttribute;
typedef struct CUlaunchConfig_st {
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned int numAttrs;
} CUlaunchConfig;
typedef struct CUDA_LAUNCH_PARAMS_st {
  CUfunction function;
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void** kernelParams;
} CUDA_LAUNCH_PARAMS;

typedef enum CUarray_format_enum {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
  CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
  CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
  CU_AD_FORMAT_SIGNED_INT8 = 0x08,
  CU_AD_FORMAT_SIGNED_INT16 = 0x09,
  CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
  CU_AD_FORMAT_HALF = 0x10,
  CU_AD_FORMAT_FLOAT = 0x20,
  CU_AD_FORMAT_BC1_UNORM = 0x91,
  CU_AD_FORMAT_NV12 = 0xb0
} CUarray_format;

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
#define CUDA_ARRAY3D_LAYERED 0x01
#define CUDA_ARRAY3D_CUBEMAP 0x04
#define CUDA_ARRAY3D_SPARSE 0x40

typedef enum CUmemAllocationType_enum { CU_MEM_ALLOCATION_TYPE_PINNED = 0x1 } CUmemAllocationType;
typedef enum CUmemAllocationHandleType_enum { CU_MEM_HANDLE_TYPE_NONE = 0x0 } CUmemAllocationHandleType;
typedef enum CUmemLocationType_enum {
  CU_MEM_LOCATION_TYPE_INVALID = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
  CU_MEM_LOCATION_TYPE_HOST = 0x2,
  CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3
} CUmemLocationType;
typedef struct CUmemLocation_st {
  CUmemLocationType type;
  int id;
} CUmemLocation;
typedef struct CUmemAllocationProp_st {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;
typedef struct CUmemPoolProps_st {
  CUmemAllocationType allocType;
  CUmemAllocationHandleType handleTypes;
  CUmemLocation location;
  void* win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;

#define CU_MEM_ATTACH_GLOBAL 0x1

typedef enum CUdriverProcAddress_flags_enum {
  CU_GET_PROC_ADDRESS_DEFAULT = 0,
  CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1
} CUdriverProcAddress_flags;
typedef enum CUdriverProcAddressQueryResult_enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

#define cuDeviceTotalMem cuDeviceTotalMem_v2
#define cuCtxCreate cuCtxCreate_v2
#define cuCtxDestroy cuCtxDestroy_v2
#define cuCtxPushCurrent cuCtxPushCurrent_v2
#define cuCtxPopCurrent cuCtxPopCurrent_v2
#define cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2
#define cuMemGetInfo cuMemGetInfo_v2
#define cuMemAlloc cuMemAlloc_v2
#define cuMemAllocPitch cuMemAllocPitch_v2
#define cuMemFree cuMemFree_v2
#define cuArrayCreate cuArrayCreate_v2
#define cuArray3DCreate cuArray3DCreate_v2
#define cuGetProcAddress cuGetProcAddress_v2
#define cuStreamDestroy cuStreamDestroy_v2
#define cuEventDestroy cuEventDestroy_v2
#define cuGraphInstantiate cuGraphInstantiateWithFlags
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define cuMemAllocAsync cuMemAllocAsync_ptsz
#define cuMemAllocFromPoolAsync cuMemAllocFromPoolAsync_ptsz
#define cuMemFreeAsync cuMemFreeAsync_ptsz
#define cuLaunchKernel cuLaunchKernel_ptsz
#define cuLaunchKernelEx cuLaunchKernelEx_ptsz
#define cuLaunchCooperativeKernel cuLaunchCooperativeKernel_ptsz
#define cuGraphLaunch cuGraphLaunch_ptsz
#define cuStreamSynchronize cuStreamSynchronize_ptsz
#define cuStreamQuery cuStreamQuery_ptsz
#define cuStreamWaitEvent cuStreamWaitEvent_ptsz
#define cuEventRecord cuEventRecord_ptsz
#define cuStreamBeginCapture cuStreamBeginCapture_v2_ptsz
#define cuStreamEndCapture cuStreamEndCapture_ptsz
#define cuStreamIsCapturing cuStreamIsCapturing_ptsz
#else
#define cuStreamBeginCapture cuStreamBeginCapture_v2
#endif

CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int* version);
CUresult cuGetErrorString(CUresult error, const char** str);
CUresult cuGetErrorName(CUresult error, const char** str);
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDeviceGetCount(int* count);
CUresult cuDeviceGetName(char* name, int len, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev);
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext* ctx);
CUresult cuCtxGetDevice(CUdevice* device);
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext* ctx);
CUresult cuCtxSynchronize(void);
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes);
CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned int element_size);
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev);
CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev);
CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props);
CUresult cuMemPoolDestroy(CUmemoryPool pool);
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
/* The per-thread-default-stream variants, declared under their own names too. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc);
CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc);
CUresult cuArrayDestroy(CUarray array);
CUresult cuMipmappedArrayCreate(CUmipmappedArray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned int levels);
CUresult cuMipmappedArrayDestroy(CUmipmappedArray array);
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status);

/* Modules and kernels: a function named sleep_<N>ns, sleep_<N>us or sleep_<N>ms runs for that
 * long on the simulated GPU; any other name takes no time (README.md "Simulated GPU"). */
CUresult cuModuleLoad(CUmodule* module, const char* fname);
CUresult cuModuleLoadData(CUmodule* module, const void* image);
CUresult cuModuleUnload(CUmodule module);
CUresult cuModuleGetFunction(CUfunction* func, CUmodule module, const char* name);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra);
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream, void** kernelParams);
CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* launchParamsList, unsigned int numDevices,
                                              unsigned int flags);
/* Streams and events. */
CUresult cuStreamCreate(CUstream* stream, unsigned int flags);
CUresult cuStreamDestroy_v2(CUstream stream);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuStreamQuery(CUstream stream);
CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags);
CUresult cuEventCreate(CUevent* event, unsigned int flags);
CUresult cuEventDestroy_v2(CUevent event);
CUresult cuEventRecord(CUevent event, CUstream stream);
CUresult cuEventQuery(CUevent event);
CUresult cuEventSynchronize(CUevent event);
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end);
/* Stream capture and graphs (a captured graph is the sequence of its kernels). */
CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph);
CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status);
CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags);
CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* errorNode, char* logBuffer,
                               size_t bufferSize);
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream);
CUresult cuGraphExecDestroy(CUgraphExec exec);
CUresult cuGraphDestroy(CUgraph graph);
/* The per-thread-default-stream variants, declared under their own names too. */
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                        void** kernelParams);
CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream);
CUresult cuStreamSynchronize_ptsz(CUstream stream);
CUresult cuStreamQuery_ptsz(CUstream stream);
CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned int flags);
CUresult cuEventRecord_ptsz(CUevent event, CUstream stream);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph);
CUresult cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus* status);

/* Memory contents (README.md "Memory"): copies between host and device memory, and memset. */
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
#define cuMemcpyHtoD cuMemcpyHtoD_v2
#define cuMemcpyDtoH cuMemcpyDtoH_v2
#define cuMemsetD8 cuMemsetD8_v2

/* The checkpoint API (CUDA 12.8 / r570; README.md "Checkpoint"). Every args struct is 64 bytes and
 * its reserved fields must be zero; args may be NULL. The restore layout is CUDA 13.0's. */
typedef enum CUprocessState_enum {
  CU_PROCESS_STATE_RUNNING = 0,
  CU_PROCESS_STATE_LOCKED = 1,
  CU_PROCESS_STATE_CHECKPOINTED = 2,
  CU_PROCESS_STATE_FAILED = 3
} CUprocessState;
typedef struct CUcheckpointLockArgs_st {
  unsigned int timeoutMs; /* 0: no timeout */
  unsigned int reserved0;
  cuuint64_t reserved1[7];
} CUcheckpointLockArgs;
typedef struct CUcheckpointCheckpointArgs_st {
  cuuint64_t reserved[8];
} CUcheckpointCheckpointArgs;
typedef struct CUcheckpointGpuPair_st {
  CUuuid oldUuid;
  CUuuid newUuid;
} CUcheckpointGpuPair;
typedef struct CUcheckpointRestoreArgs_st {
  CUcheckpointGpuPair* gpuPairs;
  unsigned int gpuPairsCount;
  char reserved[52 - sizeof(CUcheckpointGpuPair*)];
  cuuint64_t reserved1;
} CUcheckpointRestoreArgs;
typedef struct CUcheckpointUnlockArgs_st {
  cuuint64_t reserved[8];
} CUcheckpointUnlockArgs;
CUresult cuCheckpointProcessGetState(int pid, CUprocessState* state);
CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int* tid);
CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs* args);
CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs* args);
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs* args);
CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs* args);

/* Test-only (not in NVIDIA's driver): the simulated CLOCK_MONOTONIC time, in ns, at which a
 * recorded event completed (README.md "Simulated GPU"); CUDA_ERROR_NOT_READY before it completed,
 * CUDA_ERROR_INVALID_HANDLE for an event never recorded. */
CUresult gpufracFakeEventTime(CUevent event, uint64_t* ns);
/* Test-only: this process's calls of one kind (0 launch, 1 event record, 2 query, 3 synchronise),
 * the ns they busy-spun in all and the cost of one (README.md "CPU cost of driver calls"). */
CUresult gpufracFakeCost(unsigned kind, uint64_t* calls, uint64_t* spun_ns, uint64_t* cost_ns);
/* Test-only: makes this process an MPS client on a device with that SM percent, as connecting to an
 * MPS daemon does (README.md "MPS clients"); before the process's first launch there. */
CUresult gpufracFakeMpsClient(unsigned device_ordinal, unsigned sm_percent);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_FAKE_CUDA_H */
