// Per-device queries. GPU handles answer from the machine's model; MIG device handles answer
// UUID, name, memory (the instance's: its profile's memorySizeMB), processes and their MIG ids,
// and NOT_SUPPORTED for GPU-only queries (index, PCI, minor, compute capability).
#include <algorithm>

#include "fake_entry.hpp"
#include "fake_memory_limits.hpp"

using namespace gpufrac::fake_nvml;

namespace {

std::uint64_t total_bytes(const nvmlDevice_st& d) {
  return d.mig ? d.mig->gi->profile.memory_mib * gpufrac::kMiB : d.gpu->model.memory_bytes;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return with_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = g.model.index;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return with_device(
      device, [&](nvmlDevice_st& d) { return copy_string(d.mig ? d.mig->uuid : d.gpu->model.uuid, uuid, length); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return with_device(device, [&](nvmlDevice_st& d) {
    std::string n = d.gpu->model.name;
    if (d.mig) n += " MIG " + d.mig->gi->profile.name;
    return copy_string(n, name, length);
  });
}

// busId as the machine file has it; domain, bus and device parsed from it; vendor id only.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return with_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    fill_pci_info(g.model, *pci);
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return with_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!minor) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = g.model.minor;
    return NVML_SUCCESS;
  });
}

// Nothing runs on a fake GPU: all of its memory is free.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return with_device(device, [&](nvmlDevice_st& d) -> nvmlReturn_t {
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    *memory = nvmlMemory_t{total_bytes(d), total_bytes(d), 0};
    return NVML_SUCCESS;
  });
}

// Within a cgroup the driver limits (r615, fake_memory_limits.hpp): the partition, as the driver
// reports it there (total = the hard limit, used = the cgroup's).
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return with_state([&](State& s) -> nvmlReturn_t {
    nvmlDevice_st* d = find_device(s, device);
    if (!d || !memory) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    *memory = nvmlMemory_v2_t{nvmlMemory_v2, total_bytes(*d), 0, total_bytes(*d), 0};
    if (auto own = d->mig ? std::nullopt : own_limit(s, d->gpu->model.uuid)) {
      const std::uint64_t used = std::min(cgroup_used(s, own->cgroup, own->gpu_uuid), own->hard);
      *memory = nvmlMemory_v2_t{nvmlMemory_v2, own->hard, 0, own->hard - used, used};
    }
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  return with_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *major = g.model.cc_major;
    *minor = g.model.cc_minor;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* is_mig) {
  return with_device(device, [&](nvmlDevice_st& d) -> nvmlReturn_t {
    if (!is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    *is_mig = d.mig ? 1 : 0;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return with_device(device, [&](nvmlDevice_st& d) -> nvmlReturn_t {
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.mig) return NVML_ERROR_NOT_SUPPORTED;
    *id = d.mig->gi->id;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return with_device(device, [&](nvmlDevice_st& d) -> nvmlReturn_t {
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.mig) return NVML_ERROR_NOT_SUPPORTED;
    *id = d.mig->id;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t* device) {
  return with_device(mig, [&](nvmlDevice_st& d) -> nvmlReturn_t {
    if (!device || !d.mig) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &d.gpu->handle;
    return NVML_SUCCESS;
  });
}
