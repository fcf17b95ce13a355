/* Allocation APIs: linear, pitched, managed, VMM handles, stream-ordered (with pools), and
 * memory info. Streams are accepted and ignored: everything completes at once. */
#include <stdlib.h>

#include "drvlimit.h"
#include "fake_cuda.h"

#define FAKE_PITCH_ALIGN 512

static CUresult alloc_on(CUdevice dev, CUdeviceptr* dptr, size_t size) {
  if (dptr == NULL) return CUDA_ERROR_INVALID_VALUE;
  uint64_t key;
  CUresult rc = fake_mem_alloc(FAKE_PTR, dev, size, &key);
  if (rc == CUDA_SUCCESS) *dptr = key;
  return rc;
}

static CUresult alloc_current(CUdeviceptr* dptr, size_t size) {
  CUdevice dev;
  CUresult rc = fake_current_device(&dev);
  return rc != CUDA_SUCCESS ? rc : alloc_on(dev, dptr, size);
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return alloc_current(dptr, bytesize);
}

FAKE_API CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                     unsigned int element_size) {
  if (pitch == NULL || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (element_size != 4 && element_size != 8 && element_size != 16) return CUDA_ERROR_INVALID_VALUE;
  size_t p = (width + FAKE_PITCH_ALIGN - 1) / FAKE_PITCH_ALIGN * FAKE_PITCH_ALIGN;
  CUresult rc = alloc_current(dptr, p * height);
  if (rc == CUDA_SUCCESS) *pitch = p;
  return rc;
}

FAKE_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (flags != 1 && flags != 2) return CUDA_ERROR_INVALID_VALUE; /* CU_MEM_ATTACH_GLOBAL / HOST */
  return alloc_current(dptr, bytesize);
}

static CUresult free_ptr(CUdeviceptr dptr) {
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS || dptr == 0) return rc;
  return fake_mem_free(FAKE_PTR, dptr);
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return free_ptr(dptr);
}

FAKE_API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  CUdevice dev;
  CUresult rc = fake_current_device(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  uint64_t used = fake_mem_used(dev), total = fake_devices[dev].total, hard, group;
  if (fake_limit_info(dev, used, &hard, &group)) { /* the cgroup's driver limit is the total */
    total = hard < total ? hard : total;
    used = group;
  }
  if (free_bytes != NULL) *free_bytes = (size_t)(total > used ? total - used : 0);
  if (total_bytes != NULL) *total_bytes = (size_t)total;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                              unsigned long long flags) {
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS) return rc;
  if (handle == NULL || prop == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUdevice dev = -1;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    dev = prop->location.id;
    if ((rc = fake_check_device(dev)) != CUDA_SUCCESS) return rc;
  } else if (prop->location.type != CU_MEM_LOCATION_TYPE_HOST &&
             prop->location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t key;
  rc = fake_mem_alloc(FAKE_HANDLE, dev, size, &key);
  if (rc == CUDA_SUCCESS) *handle = key;
  return rc;
}

FAKE_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  CUresult rc = fake_check_init();
  return rc != CUDA_SUCCESS ? rc : fake_mem_free(FAKE_HANDLE, handle);
}

/* ---- pools ---- */
static struct fake_pool g_default_pools[FAKE_MAX_DEVICES];

static CUresult default_pool(CUmemoryPool* pool, CUdevice dev) {
  CUresult rc = fake_check_device(dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (pool == NULL) return CUDA_ERROR_INVALID_VALUE;
  g_default_pools[dev] = (struct fake_pool){FAKE_POOL_MAGIC, dev, 1};
  *pool = (CUmemoryPool)&g_default_pools[dev];
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  return default_pool(pool, dev);
}
FAKE_API CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return default_pool(pool, dev);
}

FAKE_API CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS) return rc;
  if (pool == NULL || props == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUdevice dev = -1;
  if (props->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    dev = props->location.id;
    if ((rc = fake_check_device(dev)) != CUDA_SUCCESS) return rc;
  }
  struct fake_pool* p = calloc(1, sizeof *p);
  if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (struct fake_pool){FAKE_POOL_MAGIC, dev, 0};
  *pool = (CUmemoryPool)p;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  struct fake_pool* p = (struct fake_pool*)pool;
  if (p == NULL || p->magic != FAKE_POOL_MAGIC || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  p->magic = 0;
  free(p);
  return CUDA_SUCCESS;
}

static CUresult from_pool(CUdeviceptr* dptr, size_t size, CUmemoryPool pool) {
  const struct fake_pool* p = (const struct fake_pool*)pool;
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS) return rc;
  if (p == NULL || p->magic != FAKE_POOL_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  return alloc_on(p->dev, dptr, size);
}

FAKE_API CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t n, CUstream s) {
  return (void)s, alloc_current(dptr, n);
}
FAKE_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t n, CUstream s) {
  return (void)s, alloc_current(dptr, n);
}
FAKE_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t n, CUmemoryPool pool, CUstream s) {
  return (void)s, from_pool(dptr, n, pool);
}
FAKE_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t n, CUmemoryPool pool, CUstream s) {
  return (void)s, from_pool(dptr, n, pool);
}
FAKE_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  return (void)s, free_ptr(dptr);
}
FAKE_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) {
  return (void)s, free_ptr(dptr);
}
