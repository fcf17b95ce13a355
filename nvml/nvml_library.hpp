// A loaded libnvidia-ml.so.1: dlopen, every symbol resolved up front, and NVML return codes turned
// into one-line errors. Required symbols missing make open() fail naming the first one; optional
// ones are null pointers the caller checks (old drivers lack nvmlDeviceGetMemoryInfo_v2; a library
// without MIG support lacks the MIG calls).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "nvml/nvml_api.hpp"

namespace gpufrac::nvml {

// clang-format off
// X(name): functions discovery cannot do without.
#define GPUFRAC_NVML_REQUIRED(X)                                                                         \
  X(nvmlInit_v2) X(nvmlShutdown) X(nvmlErrorString) X(nvmlSystemGetDriverVersion) X(nvmlDeviceGetCount_v2) \
  X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetIndex) X(nvmlDeviceGetUUID) X(nvmlDeviceGetName)         \
  X(nvmlDeviceGetPciInfo_v3) X(nvmlDeviceGetMinorNumber) X(nvmlDeviceGetMemoryInfo)                        \
  X(nvmlDeviceGetCudaComputeCapability)
// Optional: without GetMemoryInfo_v2 the v1 call is used; without GetMigMode no GPU is MIG-capable;
// without GetComputeRunningProcesses_v3 the burst reclaimer has no driver view and stops no process;
// without the compute instance placement calls, placements are taken as aligned and compute
// instances are created where the driver chooses.
#define GPUFRAC_NVML_OPTIONAL(X)                                                                         \
  X(nvmlDeviceGetMemoryInfo_v2) X(nvmlDeviceGetMigMode) X(nvmlGpuInstanceGetComputeInstancePossiblePlacements) \
  X(nvmlGpuInstanceCreateComputeInstanceWithPlacement) X(nvmlDeviceGetComputeRunningProcesses_v3)
// Needed only once a GPU reports MIG mode enabled (missing_mig_symbol() names the first absent one).
#define GPUFRAC_NVML_MIG(X)                                                                              \
  X(nvmlDeviceGetGpuInstanceProfileInfo) X(nvmlDeviceGetGpuInstancePossiblePlacements_v2)                 \
  X(nvmlDeviceGetGpuInstances) X(nvmlGpuInstanceGetInfo) X(nvmlGpuInstanceGetComputeInstanceProfileInfo)  \
  X(nvmlGpuInstanceGetComputeInstances) X(nvmlComputeInstanceGetInfo_v2) X(nvmlDeviceGetMaxMigDeviceCount) \
  X(nvmlDeviceGetMigDeviceHandleByIndex) X(nvmlDeviceGetGpuInstanceId) X(nvmlDeviceGetComputeInstanceId)
// Needed only to create and destroy MIG instances (dynamic MIG; missing_mig_change_symbol()).
#define GPUFRAC_NVML_MIG_CHANGE(X)                                                                       \
  X(nvmlDeviceGetHandleByUUID) X(nvmlDeviceCreateGpuInstanceWithPlacement) X(nvmlDeviceGetGpuInstanceById) \
  X(nvmlGpuInstanceCreateComputeInstance) X(nvmlComputeInstanceDestroy) X(nvmlGpuInstanceDestroy)
// Per-cgroup device-memory limits (r615+): optional; absent on older drivers, where gpufrac uses the
// shim alone (has_memory_limits()).
#define GPUFRAC_NVML_MEMORY_LIMITS(X) X(nvmlDeviceSetMemoryLimits_v1) X(nvmlDeviceGetMemoryLimits_v1)
// The compute mode (SM sharing: nvml/mps_keeper.hpp): optional; without them no GPU becomes MPS.
#define GPUFRAC_NVML_COMPUTE_MODE(X) X(nvmlDeviceGetComputeMode) X(nvmlDeviceSetComputeMode)
// Topology (nvml_topology.cpp): optional; without a call, that part of the topology is unknown.
#define GPUFRAC_NVML_TOPOLOGY(X)                                                                         \
  X(nvmlDeviceGetTopologyCommonAncestor) X(nvmlDeviceGetNvLinkState) X(nvmlDeviceGetNvLinkRemotePciInfo_v2) \
  X(nvmlDeviceGetP2PStatus) X(nvmlDeviceGetNumaNodeId)
// clang-format on

struct Symbols {
#define GPUFRAC_NVML_POINTER(name) decltype(&::name) name = nullptr;
  GPUFRAC_NVML_REQUIRED(GPUFRAC_NVML_POINTER)
  GPUFRAC_NVML_OPTIONAL(GPUFRAC_NVML_POINTER)
  GPUFRAC_NVML_MIG(GPUFRAC_NVML_POINTER)
  GPUFRAC_NVML_MIG_CHANGE(GPUFRAC_NVML_POINTER)
  GPUFRAC_NVML_MEMORY_LIMITS(GPUFRAC_NVML_POINTER)
  GPUFRAC_NVML_TOPOLOGY(GPUFRAC_NVML_POINTER)
  GPUFRAC_NVML_COMPUTE_MODE(GPUFRAC_NVML_POINTER)
#undef GPUFRAC_NVML_POINTER
};

class Library {
 public:
  // dlopen(path) (a bare name goes through the loader's search path) and dlsym of every symbol.
  // A library that is not there: "NVIDIA driver library <path> was not found (...); use --machine".
  static Result<Library> open(const std::string& path);

  const Symbols& fn() const { return fn_; }
  const std::string& path() const { return path_; }
  // "Driver Not Loaded (9)": the library's own text for a return code, and the code.
  std::string error_text(nvmlReturn_t code) const;
  // Success, or an error "<call>: <error_text>".
  Result<> check(nvmlReturn_t code, std::string_view call) const;
  // nvmlInit_v2, with a one-line error naming the NVML error and what to do.
  Result<> init() const;
  // The handle of the GPU with this UUID ("GPU-..."), or "<uuid>: the driver lists no such GPU".
  Result<nvmlDevice_t> device_by_uuid(const std::string& gpu_uuid) const;
  // The first MIG function the library lacks, or "" when it has them all.
  std::string missing_mig_symbol() const;
  // The same for the functions that create and destroy MIG instances.
  std::string missing_mig_change_symbol() const;
  // Whether the library exports both per-cgroup memory-limit calls (r615+).
  bool has_memory_limits() const { return fn_.nvmlDeviceSetMemoryLimits_v1 && fn_.nvmlDeviceGetMemoryLimits_v1; }

 private:
  struct Closer {
    void operator()(void* handle) const;
  };
  std::unique_ptr<void, Closer> handle_;
  std::string path_;
  Symbols fn_;
  std::string missing_mig_;
  std::string missing_mig_change_;
};

// Bytes per entry nvmlDeviceGetComputeRunningProcesses_v3 writes for a driver version string:
// 32 on 535.43.x to 535.86.x (nvmlProcessInfo_535_43_t), 24 everywhere else (nvmlProcessInfo_t).
std::size_t nvml_process_info_size(std::string_view driver_version);

}  // namespace gpufrac::nvml
