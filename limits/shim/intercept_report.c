/* What a limited device reports: cuMemGetInfo_v2 total = min(limit, real total) and free =
/* What a limited device reports: cuMemGetInfo_v2 total = min(limit, real total) and free =
 * min(room - in use, real free), never negative, where room is the limit, or with a burst limit what
 * the container may hold now (its request, or the reclaimer's ceiling: limits_abi.h);
 * cuDeviceTotalMem_v2 = min(limit, real total); NVML memory info the same, with used = the
 * container's bytes in use. NULL output pointers are tolerated. While the limit file is invalid
 * (every allocation refused) free is reported as 0. */
#include "gf_charge.h"
#include "gf_exports.h"

typedef CUresult (*meminfo_fn)(size_t*, size_t*);
typedef CUresult (*totalmem_fn)(size_t*, CUdevice);
typedef nvmlReturn_t (*nvml_mem_fn)(nvmlDevice_t, nvmlMemory_t*);
typedef nvmlReturn_t (*nvml_mem2_fn)(nvmlDevice_t, nvmlMemory_v2_t*);

static uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

/* The limited view of device idx: total and used, given the driver's total; *room is the most the
 * container may hold now (the total, or with a burst limit what the reclaimer lets it borrow). */
static void limited(int idx, uint64_t real_total, uint64_t* total, uint64_t* used, uint64_t* room) {
  *total = min_u64(gf_g.cfg.devices[idx].limit, real_total);
  if (gf_g.region == NULL) {
    *used = *room = *total; /* no region: nothing can be allocated */
    return;
  }
  gf_reclaim_for_report();
  *used = min_u64(gf_in_use(idx), *total);
  *room = GF_LIKELY(gf_g.cfg.devices[idx].request == 0) ? *total : min_u64(gf_burst_room(idx), *total);
  if (*room < *used) *room = *used;
}

GF_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  meminfo_fn real = (meminfo_fn)gf_cuda(GF_cuMemGetInfo_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  size_t f = 0, t = 0;
  CUresult rc = real(&f, &t);
  if (rc != CUDA_SUCCESS) return rc;
  int mode = gf_mode();
  if (mode == GF_MODE_REFUSE_ALL) f = 0;
  if (mode == GF_MODE_ACTIVE) {
    CUresult err;
    int idx = gf_current_index(&err);
    if (idx >= 0) {
      uint64_t total, used, room;
      limited(idx, t, &total, &used, &room);
      f = (size_t)min_u64(room - used, f);
      t = (size_t)total;
    }
  }
  if (free_bytes != NULL) *free_bytes = f;
  if (total_bytes != NULL) *total_bytes = t;
  return CUDA_SUCCESS;
}

GF_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  totalmem_fn real = (totalmem_fn)gf_cuda(GF_cuDeviceTotalMem_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  size_t t = 0;
  CUresult rc = real(&t, dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (gf_mode() == GF_MODE_ACTIVE) {
    CUresult err;
    int idx = gf_device_index(dev, &err);
    if (idx >= 0) t = (size_t)min_u64(gf_g.cfg.devices[idx].limit, t);
  }
  if (bytes != NULL) *bytes = t;
  return CUDA_SUCCESS;
}

/* Rewrites NVML's (total, free, used) for a limited device. reserved is part of total (v2). */
static void nvml_view(nvmlDevice_t device, unsigned long long* total, unsigned long long* free_b,
                      unsigned long long* used, unsigned long long* reserved) {
  int mode = gf_mode();
  if (mode == GF_MODE_REFUSE_ALL) {
    *used = *total - (reserved != NULL ? *reserved : 0);
    *free_b = 0;
    return;
  }
  int idx = mode == GF_MODE_ACTIVE ? gf_nvml_index(device) : GF_UNLIMITED;
  if (idx < 0) return;
  uint64_t t, u, room;
  limited(idx, *total, &t, &u, &room);
  *total = t;
  *used = u;
  *free_b = room - u;
  if (reserved != NULL) *reserved = 0;
}

GF_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  nvml_mem_fn real = (nvml_mem_fn)gf_nvml(GF_nvmlDeviceGetMemoryInfo);
  if (GF_UNLIKELY(real == NULL)) return gf_nvml_missing();
  nvmlReturn_t rc = real(device, memory);
  if (rc == NVML_SUCCESS && memory != NULL) nvml_view(device, &memory->total, &memory->free, &memory->used, NULL);
  return rc;
}

/* The driver checks memory->version (nvmlMemory_v2, 0x02000028) and refuses another. */
GF_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  nvml_mem2_fn real = (nvml_mem2_fn)gf_nvml(GF_nvmlDeviceGetMemoryInfo_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_nvml_missing();
  nvmlReturn_t rc = real(device, memory);
  if (rc == NVML_SUCCESS && memory != NULL && memory->version == nvmlMemory_v2) {
    nvml_view(device, &memory->total, &memory->free, &memory->used, &memory->reserved);
  }
  return rc;
}
