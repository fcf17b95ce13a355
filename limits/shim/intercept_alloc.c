/* Synchronous device allocations: cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocManaged, and
 * cuMemFree_v2 (which also frees stream-ordered allocations). All on the current context's
 * device. Managed memory counts in full against that device: it may live there. */
#include "gf_charge.h"
#include "gf_exports.h"

typedef CUresult (*alloc_fn)(CUdeviceptr*, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*pitch_fn)(CUdeviceptr*, size_t*, size_t, size_t, unsigned int);
typedef CUresult (*managed_fn)(CUdeviceptr*, size_t, unsigned int);

#define GF_PITCH_GUESS 512 /* the usual pitch alignment; the exact pitch is settled afterwards */

GF_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  alloc_fn real = (alloc_fn)gf_cuda(GF_cuMemAlloc_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = gf_charge_current(bytesize, "cuMemAlloc_v2", &idx, &rc);
  if (how == GF_REFUSED) return rc;
  rc = real(dptr, bytesize);
  GF_RETRY_OOM(how, idx, bytesize, "cuMemAlloc_v2", rc, real(dptr, bytesize));
  if (how == GF_COUNTED) gf_settle(rc, &gf_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, idx, bytesize);
  return rc;
}

GF_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  free_fn real = (free_fn)gf_cuda(GF_cuMemFree_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  struct gf_held held = gf_free_begin(&gf_ptrs, dptr);
  return gf_free_end(real(dptr), &gf_ptrs, dptr, held);
}

/* Moves a pitch reservation from the guess to pitch * height as the driver returned it. */
static CUresult settle_pitch(CUdeviceptr* dptr, size_t pitch, size_t height, int idx, uint64_t guess) {
  uint64_t actual = (uint64_t)pitch * height;
  if (actual > guess) {
    CUresult rc = gf_reserve(idx, actual - guess, "cuMemAllocPitch_v2");
    if (rc != CUDA_SUCCESS) {
      ((free_fn)gf_cuda(GF_cuMemFree_v2))(*dptr);
      gf_release(idx, guess);
      return rc;
    }
  } else if (actual < guess) {
    gf_release(idx, guess - actual);
  }
  gf_track(&gf_ptrs, *dptr, idx, actual);
  return CUDA_SUCCESS;
}

GF_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                      unsigned int element_size) {
  pitch_fn real = (pitch_fn)gf_cuda(GF_cuMemAllocPitch_v2);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  uint64_t guess = 0;
  if (width > SIZE_MAX - GF_PITCH_GUESS ||
      __builtin_mul_overflow((uint64_t)(width + GF_PITCH_GUESS - 1) / GF_PITCH_GUESS * GF_PITCH_GUESS, height,
                             &guess)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = gf_charge_current(guess, "cuMemAllocPitch_v2", &idx, &rc);
  if (how == GF_REFUSED) return rc;
  rc = real(dptr, pitch, width, height, element_size);
  GF_RETRY_OOM(how, idx, guess, "cuMemAllocPitch_v2", rc, real(dptr, pitch, width, height, element_size));
  if (how != GF_COUNTED) return rc;
  if (rc != CUDA_SUCCESS) {
    gf_release(idx, guess);
    return rc;
  }
  return settle_pitch(dptr, *pitch, height, idx, guess);
}

GF_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  managed_fn real = (managed_fn)gf_cuda(GF_cuMemAllocManaged);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  int idx = 0;
  CUresult rc = CUDA_SUCCESS;
  enum gf_charge how = gf_charge_current(bytesize, "cuMemAllocManaged", &idx, &rc);
  if (how == GF_REFUSED) return rc;
  rc = real(dptr, bytesize, flags);
  GF_RETRY_OOM(how, idx, bytesize, "cuMemAllocManaged", rc, real(dptr, bytesize, flags));
  if (how == GF_COUNTED) gf_settle(rc, &gf_ptrs, rc == CUDA_SUCCESS ? *dptr : 0, idx, bytesize);
  return rc;
}
