/* Stream-ordered allocations. Each request counts its own size, from cuMemAllocAsync or
 * cuMemAllocFromPoolAsync to cuMemFreeAsync or cuMemFree_v2; what a pool keeps cached above
 * that is not counted (the default pool returns it to the driver at every synchronisation, its
 * release threshold being 0). Counting the pool's reserved size instead is what made a peer shim
 * refuse allocations in an alloc/free loop that never held more than one block.
 * A pool's device comes from cuMemPoolCreate or cuDevice(Get|GetDefault)MemPool; a pool this
 * process never saw counts on the current device; a host-located pool is not device memory. */
#include "gf_charge.h"
#include "gf_exports.h"

typedef CUresult (*async_fn)(CUdeviceptr*, size_t, CUstream);
typedef CUresult (*pool_alloc_fn)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*pool_create_fn)(CUmemoryPool*, const CUmemPoolProps*);
typedef CUresult (*pool_destroy_fn)(CUmemoryPool);
typedef CUresult (*dev_pool_fn)(CUmemoryPool*, CUdevice);

static CUresult alloc_async(enum gf_cuda_fn which, const char* api, CUdeviceptr* dptr, size_t n, CUstream s) {
  async_fn real = (async_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = gf_charge_current(n, api, &idx, &rc);
  if (how == GF_REFUSED) return rc;
  rc = real(dptr, n, s);
  GF_RETRY_OOM(how, idx, n, api, rc, real(dptr, n, s));
  if (how == GF_COUNTED) gf_settle(rc, &gf_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, idx, n);
  return rc;
}

static enum gf_charge charge_pool(CUmemoryPool pool, size_t n, const char* api, int* idx, CUresult* rc) {
  uint64_t dev_plus_one = 0;
  if (gf_mode() == GF_MODE_INERT) return GF_PASS;
  if (!gf_table_find(&gf_pools, (uint64_t)(uintptr_t)pool, &dev_plus_one)) return gf_charge_current(n, api, idx, rc);
  if (dev_plus_one == 0) return GF_PASS;
  return gf_charge_device((CUdevice)(dev_plus_one - 1), n, api, idx, rc);
}

static CUresult alloc_pool(enum gf_cuda_fn which, const char* api, CUdeviceptr* dptr, size_t n, CUmemoryPool pool,
                           CUstream s) {
  pool_alloc_fn real = (pool_alloc_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = charge_pool(pool, n, api, &idx, &rc);
  if (how == GF_REFUSED) return rc;
  rc = real(dptr, n, pool, s);
  GF_RETRY_OOM(how, idx, n, api, rc, real(dptr, n, pool, s));
  if (how == GF_COUNTED) gf_settle(rc, &gf_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, idx, n);
  return rc;
}

static CUresult free_async(enum gf_cuda_fn which, CUdeviceptr dptr, CUstream s) {
  free_async_fn real = (free_async_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  struct gf_held held = gf_free_begin(&gf_ptrs, dptr);
  return gf_free_end(real(dptr, s), &gf_ptrs, dptr, held);
}

GF_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t n, CUstream s) {
  return alloc_async(GF_cuMemAllocAsync, "cuMemAllocAsync", dptr, n, s);
}
GF_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t n, CUstream s) {
  return alloc_async(GF_cuMemAllocAsync_ptsz, "cuMemAllocAsync_ptsz", dptr, n, s);
}
GF_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t n, CUmemoryPool pool, CUstream s) {
  return alloc_pool(GF_cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", dptr, n, pool, s);
}
GF_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t n, CUmemoryPool pool, CUstream s) {
  return alloc_pool(GF_cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync_ptsz", dptr, n, pool, s);
}
GF_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  return free_async(GF_cuMemFreeAsync, dptr, s);
}
GF_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) {
  return free_async(GF_cuMemFreeAsync_ptsz, dptr, s);
}

static void remember_pool(CUmemoryPool pool, uint64_t dev_plus_one) {
  uint64_t known;
  if (!gf_table_find(&gf_pools, (uint64_t)(uintptr_t)pool, &known)) {
    gf_table_insert(&gf_pools, (uint64_t)(uintptr_t)pool, dev_plus_one);
  }
}

GF_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  pool_create_fn real = (pool_create_fn)gf_cuda(GF_cuMemPoolCreate);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  CUresult rc = real(pool, props);
  if (rc == CUDA_SUCCESS && props != NULL) {
    const gf_mem_props_prefix* p = (const gf_mem_props_prefix*)(const void*)props;
    remember_pool(*pool, p->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? (uint64_t)p->location.id + 1 : 0);
  }
  return rc;
}

GF_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  pool_destroy_fn real = (pool_destroy_fn)gf_cuda(GF_cuMemPoolDestroy);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  CUresult rc = real(pool);
  uint64_t dev_plus_one;
  if (rc == CUDA_SUCCESS) gf_table_remove(&gf_pools, (uint64_t)(uintptr_t)pool, &dev_plus_one);
  return rc;
}

static CUresult device_pool(enum gf_cuda_fn which, CUmemoryPool* pool, CUdevice dev) {
  dev_pool_fn real = (dev_pool_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  CUresult rc = real(pool, dev);
  if (rc == CUDA_SUCCESS && dev >= 0) remember_pool(*pool, (uint64_t)dev + 1);
  return rc;
}

GF_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  return device_pool(GF_cuDeviceGetDefaultMemPool, pool, dev);
}
GF_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return device_pool(GF_cuDeviceGetMemPool, pool, dev);
}
