/* The device memory a CUDA array is estimated to take (see array_size.c). */
#ifndef GPUFRAC_SHIM_GF_ARRAY_H
#define GPUFRAC_SHIM_GF_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of an array of width x height x depth elements (height or depth 0: that dimension is
 * absent) in the given CUarray_format with channels channels, summed over levels mipmap levels
 * (0 or 1: a plain array). Flags are CUDA_ARRAY3D_* flags. Saturates at UINT64_MAX. */
uint64_t gf_array_bytes(size_t width, size_t height, size_t depth, int format, unsigned channels, unsigned flags,
                        unsigned levels);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_ARRAY_H */
