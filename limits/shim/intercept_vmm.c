/* Virtual memory management: cuMemCreate charges the device named in the allocation properties
 * (device-located allocations only; host and NUMA locations are not device memory) and
 * cuMemRelease gives it back, keyed by the handle. The bytes are counted from create to release;
 * a handle released while still mapped stays allocated in the driver until cuMemUnmap, which
 * this count does not follow. */
#include "gf_charge.h"
#include "gf_exports.h"

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);

GF_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                               unsigned long long flags) {
  create_fn real = (create_fn)gf_cuda(GF_cuMemCreate);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  const gf_mem_props_prefix* p = (const gf_mem_props_prefix*)(const void*)prop;
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = GF_PASS;
  if (p != NULL && p->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    how = gf_charge_device(p->location.id, size, "cuMemCreate", &idx, &rc);
  }
  if (how == GF_REFUSED) return rc;
  rc = real(handle, size, prop, flags);
  GF_RETRY_OOM(how, idx, size, "cuMemCreate", rc, real(handle, size, prop, flags));
  if (how == GF_COUNTED) gf_settle(rc, &gf_handles, rc == CUDA_SUCCESS ? *handle : 0, idx, size);
  return rc;
}

GF_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  release_fn real = (release_fn)gf_cuda(GF_cuMemRelease);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  struct gf_held held = gf_free_begin(&gf_handles, handle);
  return gf_free_end(real(handle), &gf_handles, handle, held);
}
