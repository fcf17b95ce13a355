// The subset of the NVML C API gpufrac uses, declared by the project itself (no NVIDIA header):
// return codes, handle types, structs and function prototypes, each with the ABI of the real
// libnvidia-ml.so.1 on x86_64 (sizes and offsets are checked below). The real backend resolves
// these functions with dlsym (nvml_library.hpp); the fake library in tests/fakes/nvml defines
// them, so both sides are compiled against the same declarations.
#pragma once

#include <cstddef>

extern "C" {

typedef int nvmlReturn_t;  // the header's enum nvmlReturn_enum: an int on every supported ABI
enum : nvmlReturn_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

// Opaque handles: pointers to structs only the library defines.
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;

enum : unsigned int {
  NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16,
  NVML_DEVICE_MIG_DISABLE = 0,
  NVML_DEVICE_MIG_ENABLE = 1,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 0x8,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX = 0xA,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX = 0xB,
  NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX = 0xC,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME = 0xD,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME = 0xE,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME = 0xF,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME = 0x10,
  NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX = 0x11,
  NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12,
  // Compute instance profile indices: 1, 2, 3, 4, 7, 8, 6 slices, then 1_SLICE_REV1 (0x7) and
  // 7_SLICE_NVL (0x8), which have the slice counts of 1_SLICE and 7_SLICE.
  NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7,
  NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL = 0x8,
  NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x9,
  NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0x0,
};

typedef struct {
  unsigned long long total, free, used;  // bytes
} nvmlMemory_t;

typedef struct {
  unsigned int version;  // must be nvmlMemory_v2 (0x02000028), not 2
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];  // "0000:07:00.0"
  unsigned int domain, bus, device;
  unsigned int pciDeviceId;  // device id << 16 | vendor 0x10DE
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "00000000:07:00.0"
} nvmlPciInfo_t;

// What nvmlDeviceGetComputeRunningProcesses_v3 writes per process (= nvmlProcessInfo_v2_t), on
// every driver except 535.43.x to 535.86.x: those wrote nvmlProcessInfo_535_43_t (32 bytes) under
// the same name and without a version bump; 535.98 reverted it. A caller must size its buffer and
// stride by nvml_process_info_size(driver version) (nvml_library.hpp).
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
  unsigned int gpuInstanceId;        // 0xFFFFFFFF when not on a MIG device
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_535_43_t;

typedef struct {
  unsigned int start, size;  // memory slices (GPU instance) or compute slices (compute instance)
} nvmlGpuInstancePlacement_t;
typedef nvmlGpuInstancePlacement_t nvmlComputeInstancePlacement_t;

typedef struct {
  unsigned int id;  // GI profile id, the one create and placement calls take
  unsigned int isP2pSupported;
  unsigned int sliceCount;     // compute slices
  unsigned int instanceCount;  // max instances of this profile
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
  unsigned long long memorySizeMB;  // MiB
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
  nvmlDevice_t device;  // the parent GPU
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
  unsigned int id, sliceCount, instanceCount, multiprocessorCount;
  unsigned int sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
  nvmlDevice_t device;  // documented as the parent device; gpufrac does not rely on it
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

// Per-cgroup device-memory limits (driver r615, CUDA 13.4): on a cgroup v2 path (the full sysfs
// path of its directory), enforced by the driver for every process of the cgroup. Hard: the most
// it may allocate (CUDA_ERROR_OUT_OF_MEMORY past it; cuMemGetInfo reports it as the total); soft:
// guaranteed before allocations may fail under pressure. Set is root only; soft 0 and hard
// NVML_DEVICE_MEMORY_LIMIT_MAX clear it. Not on MIG device handles.
typedef struct {
  const char* nameSpace;                    // full path of the cgroup's directory, e.g. /sys/fs/cgroup/x.slice/y
  unsigned long long softLimit, hardLimit;  // bytes
} nvmlSetMemoryLimits_v1_t;

typedef struct {
  const char* nameSpace;                                 // [in]
  unsigned long long softLimit, hardLimit, currentUsed;  // [out] bytes
} nvmlGetMemoryLimits_v1_t;

enum : unsigned long long { NVML_DEVICE_MEMORY_LIMIT_MAX = ~0ull };  // hard limit: "none"

// Topology. nvmlGpuTopologyLevel_t: the closest common ancestor of two GPUs on the PCIe tree, as
// nvidia-smi topo -m names it (SINGLE PIX, MULTIPLE PXB, HOSTBRIDGE PHB, NODE, SYSTEM SYS).
typedef int nvmlGpuTopologyLevel_t;
enum : nvmlGpuTopologyLevel_t {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
};
typedef int nvmlEnableState_t;
enum : nvmlEnableState_t { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
typedef int nvmlGpuP2PCapsIndex_t;
enum : nvmlGpuP2PCapsIndex_t { NVML_P2P_CAPS_INDEX_NVLINK = 2 };
typedef int nvmlGpuP2PStatus_t;
enum : nvmlGpuP2PStatus_t { NVML_P2P_STATUS_OK = 0, NVML_P2P_STATUS_NOT_SUPPORTED = 5 };
enum : unsigned int { NVML_NVLINK_MAX_LINKS = 18 };  // 12 before r520: a higher link is INVALID_ARGUMENT

// System
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
const char* nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
// Devices
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos);
// MIG
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t* info);
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t* placements, unsigned int* count);
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t* gpuInstances,
                                       unsigned int* count);
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpuInstance);
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances, unsigned int* count);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t* computeInstance);
nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t* info);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice);
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t* device);
// MIG creation and destruction (dynamic MIG). Creating over an occupied placement, past a
// profile's instance count or the GPU's compute slices is NVML_ERROR_INSUFFICIENT_RESOURCES;
// destroying an instance with processes (or a GPU instance with compute instances) NVML_ERROR_IN_USE.
nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                       unsigned int* count);
nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t* gpuInstance);
nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* gpuInstance);
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                unsigned int* count);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance);
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance);
// Topology (optional: a call a library lacks, or that fails, leaves that part unknown).
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t* pathInfo);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuP2PCapsIndex_t p2pIndex,
                                    nvmlGpuP2PStatus_t* p2pStatus);
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node);
// Per-cgroup memory limits (r615+; absent from older libraries). Errors: NO_PERMISSION (not root),
// INVALID_ARGUMENT (soft > hard, or above the device's memory), NOT_SUPPORTED (MIG handles, GPUs
// without the feature), OPERATING_SYSTEM (the cgroup path), NOT_FOUND (get: no limit there).
nvmlReturn_t nvmlDeviceSetMemoryLimits_v1(nvmlDevice_t device, nvmlSetMemoryLimits_v1_t* limits);
nvmlReturn_t nvmlDeviceGetMemoryLimits_v1(nvmlDevice_t device, nvmlGetMemoryLimits_v1_t* limits);
// The compute mode (nvmlComputeMode_t): who may create a context on the GPU. MPS wants
// EXCLUSIVE_PROCESS, so the MPS server is the only context (docs/architecture.md "SM sharing").
// Set needs root (NO_PERMISSION otherwise); NOT_SUPPORTED on MIG device handles.
typedef unsigned int nvmlComputeMode_t;
enum : nvmlComputeMode_t {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,  // deprecated
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode);
nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode);
// Compute instances at a placement (compute slices inside the GPU instance; compute instances of
// several sizes in one GPU instance). Placements lists every placement, free or not.
nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                 nvmlComputeInstancePlacement_t* placements,
                                                                 unsigned int* count);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                               const nvmlComputeInstancePlacement_t* placement,
                                                               nvmlComputeInstance_t* computeInstance);

}  // extern "C"

// NVML_STRUCT_VERSION(size, version): the version word of a versioned struct.
constexpr unsigned int nvml_struct_version(std::size_t size, unsigned int version) {
  return static_cast<unsigned int>(size) | (version << 24);
}
constexpr unsigned int nvmlMemory_v2 = nvml_struct_version(sizeof(nvmlMemory_v2_t), 2);

// The ABI as measured against NVIDIA's nvml.h on x86_64 (docs: reference nvml-and-mig.md §2).
static_assert(sizeof(void*) == 8, "the NVML declarations here are for 64-bit targets");
static_assert(sizeof(nvmlReturn_t) == 4);
static_assert(sizeof(nvmlDevice_t) == 8);
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40 && offsetof(nvmlMemory_v2_t, total) == 8 &&
              offsetof(nvmlMemory_v2_t, used) == 32);
static_assert(nvmlMemory_v2 == 0x02000028);
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, domain) == 16 &&
              offsetof(nvmlPciInfo_t, pciSubSystemId) == 32 && offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlProcessInfo_t) == 24 && offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8 &&
              offsetof(nvmlProcessInfo_t, gpuInstanceId) == 16 && offsetof(nvmlProcessInfo_t, computeInstanceId) == 20);
static_assert(sizeof(nvmlProcessInfo_535_43_t) == 32 &&
              offsetof(nvmlProcessInfo_535_43_t, usedGpuCcProtectedMemory) == 24);
static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48 && offsetof(nvmlGpuInstanceProfileInfo_t, sliceCount) == 8 &&
              offsetof(nvmlGpuInstanceProfileInfo_t, ofaCount) == 36 &&
              offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24 && offsetof(nvmlGpuInstanceInfo_t, id) == 8 &&
              offsetof(nvmlGpuInstanceInfo_t, placement) == 16);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36 &&
              offsetof(nvmlComputeInstanceProfileInfo_t, sharedOfaCount) == 32);
static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32 && offsetof(nvmlComputeInstanceInfo_t, gpuInstance) == 8 &&
              offsetof(nvmlComputeInstanceInfo_t, id) == 16 && offsetof(nvmlComputeInstanceInfo_t, placement) == 24);
static_assert(sizeof(nvmlSetMemoryLimits_v1_t) == 24 && offsetof(nvmlSetMemoryLimits_v1_t, hardLimit) == 16);
static_assert(sizeof(nvmlGetMemoryLimits_v1_t) == 32 && offsetof(nvmlGetMemoryLimits_v1_t, currentUsed) == 24);
