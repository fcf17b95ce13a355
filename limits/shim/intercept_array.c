/* CUDA arrays and mipmapped arrays, charged on the current device by the estimate of
 * array_size.c and given back at destroy. */
#include "gf_array.h"
#include "gf_charge.h"
#include "gf_exports.h"

typedef CUresult (*array_fn)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*);
typedef CUresult (*array3d_fn)(CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*);
typedef CUresult (*mipmap_fn)(CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned int);
typedef CUresult (*array_destroy_fn)(CUarray);
typedef CUresult (*mipmap_destroy_fn)(CUmipmappedArray);

GF_EXPORT CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc) {
  array_fn real = (array_fn)gf_cuda(GF_cuArrayCreate_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  uint64_t n = desc == NULL ? 0 : gf_array_bytes(desc->Width, desc->Height, 0, desc->Format, desc->NumChannels, 0, 1);
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = gf_charge_current(n, "cuArrayCreate_v2", &idx, &rc);
  if (how == GF_REFUSED) return rc;
  rc = real(array, desc);
  GF_RETRY_OOM(how, idx, n, "cuArrayCreate_v2", rc, real(array, desc));
  if (how == GF_COUNTED) gf_settle(rc, &gf_arrays, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*array : 0, idx, n);
  return rc;
}

GF_EXPORT CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  array3d_fn real = (array3d_fn)gf_cuda(GF_cuArray3DCreate_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  uint64_t n = desc == NULL ? 0
                            : gf_array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels,
                                             desc->Flags, 1);
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = gf_charge_current(n, "cuArray3DCreate_v2", &idx, &rc);
  if (how == GF_REFUSED) return rc;
  rc = real(array, desc);
  GF_RETRY_OOM(how, idx, n, "cuArray3DCreate_v2", rc, real(array, desc));
  if (how == GF_COUNTED) gf_settle(rc, &gf_arrays, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*array : 0, idx, n);
  return rc;
}

GF_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                          unsigned int levels) {
  mipmap_fn real = (mipmap_fn)gf_cuda(GF_cuMipmappedArrayCreate);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  uint64_t n = desc == NULL ? 0
                            : gf_array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels,
                                             desc->Flags, levels);
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = gf_charge_current(n, "cuMipmappedArrayCreate", &idx, &rc);
  if (how == GF_REFUSED) return rc;
  rc = real(array, desc, levels);
  GF_RETRY_OOM(how, idx, n, "cuMipmappedArrayCreate", rc, real(array, desc, levels));
  if (how == GF_COUNTED) gf_settle(rc, &gf_mipmaps, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*array : 0, idx, n);
  return rc;
}

GF_EXPORT CUresult cuArrayDestroy(CUarray array) {
  array_destroy_fn real = (array_destroy_fn)gf_cuda(GF_cuArrayDestroy);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  uint64_t key = (uint64_t)(uintptr_t)array;
  struct gf_held held = gf_free_begin(&gf_arrays, key);
  return gf_free_end(real(array), &gf_arrays, key, held);
}

GF_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  mipmap_destroy_fn real = (mipmap_destroy_fn)gf_cuda(GF_cuMipmappedArrayDestroy);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  uint64_t key = (uint64_t)(uintptr_t)array;
  struct gf_held held = gf_free_begin(&gf_mipmaps, key);
  return gf_free_end(real(array), &gf_mipmaps, key, held);
}
