/* CUDA arrays and mipmapped arrays: width x height x depth x channels x bytes per channel,
 * summed over mipmap levels (a simpler model than the shim's estimate: the fake only needs the
 * device total to hold). */
#include "fake_cuda.h"

static uint64_t channel_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    default:
      return 4;
  }
}

static uint64_t at_least_one(uint64_t v) {
  return v ? v : 1;
}

static uint64_t size_of(const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels) {
  uint64_t total = 0, per = channel_bytes(d->Format) * at_least_one(d->NumChannels);
  for (unsigned l = 0; l < at_least_one(levels) && l < 64; l++) {
    total += at_least_one(d->Width >> l) * at_least_one(d->Height >> l) * at_least_one(d->Depth >> l) * per;
  }
  return total;
}

static CUresult create(enum fake_kind kind, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels, uint64_t* key) {
  CUdevice dev;
  CUresult rc = fake_current_device(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (d == NULL || d->Width == 0 || d->NumChannels == 0 || d->NumChannels > 4) return CUDA_ERROR_INVALID_VALUE;
  uint64_t size = d->Flags & CUDA_ARRAY3D_SPARSE ? 1 : size_of(d, levels);
  return fake_mem_alloc(kind, d->Flags & CUDA_ARRAY3D_SPARSE ? -1 : dev, size, key);
}

FAKE_API CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc) {
  if (array == NULL || desc == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d = {desc->Width, desc->Height, 0, desc->Format, desc->NumChannels, 0};
  uint64_t key;
  CUresult rc = create(FAKE_ARRAY, &d, 1, &key);
  if (rc == CUDA_SUCCESS) *array = (CUarray)(uintptr_t)key;
  return rc;
}

FAKE_API CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  if (array == NULL) return CUDA_ERROR_INVALID_VALUE;
  uint64_t key;
  CUresult rc = create(FAKE_ARRAY, desc, 1, &key);
  if (rc == CUDA_SUCCESS) *array = (CUarray)(uintptr_t)key;
  return rc;
}

FAKE_API CUresult cuMipmappedArrayCreate(CUmipmappedArray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                         unsigned int levels) {
  if (array == NULL || levels == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t key;
  CUresult rc = create(FAKE_MIPMAP, desc, levels, &key);
  if (rc == CUDA_SUCCESS) *array = (CUmipmappedArray)(uintptr_t)key;
  return rc;
}

FAKE_API CUresult cuArrayDestroy(CUarray array) {
  return fake_mem_free(FAKE_ARRAY, (uint64_t)(uintptr_t)array);
}
FAKE_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  return fake_mem_free(FAKE_MIPMAP, (uint64_t)(uintptr_t)array);
}
