/* Array size estimate: width x height x depth x bytes per element, where an element is one
 * texel of NumChannels channels (or a 4x4 block of a block-compressed format), and mipmap levels
 * halve width, height and depth (not the layers of a layered or cubemap array) down to 1. The
 * driver pads rows and tiles arrays, so the real footprint is this or somewhat more. Sparse and
 * deferred-mapping arrays take no memory of their own (their backing comes from cuMemCreate). */
#include "gf_array.h"
#include "gf_cuda.h"

struct texel {
  unsigned bytes; /* per channel (per_texel 0), per texel (per_texel 1), per 4x4 block (block 1) */
  unsigned per_texel;
  unsigned block;
};

/* CUarray_format values of cuda.h (CUDA 12) and what one element of them takes. */
/* clang-format off */
static const struct {
  int format;
  struct texel t;
} kFormats[] = {
  {0x01, {1, 0, 0}}, {0x08, {1, 0, 0}},                                         /* 8-bit integer */
  {0xc0, {1, 0, 0}}, {0xc1, {1, 0, 0}}, {0xc2, {1, 0, 0}},                      /* 8-bit unorm x1 x2 x4 */
  {0xc6, {1, 0, 0}}, {0xc7, {1, 0, 0}}, {0xc8, {1, 0, 0}},                      /* 8-bit snorm */
  {0x02, {2, 0, 0}}, {0x09, {2, 0, 0}}, {0x10, {2, 0, 0}},                      /* 16-bit integer, half */
  {0xc3, {2, 0, 0}}, {0xc4, {2, 0, 0}}, {0xc5, {2, 0, 0}},                      /* 16-bit unorm */
  {0xc9, {2, 0, 0}}, {0xca, {2, 0, 0}}, {0xcb, {2, 0, 0}},                      /* 16-bit snorm */
  {0x03, {4, 0, 0}}, {0x0a, {4, 0, 0}}, {0x20, {4, 0, 0}},                      /* 32-bit integer, float */
  {0x91, {8, 0, 1}}, {0x92, {8, 0, 1}}, {0x97, {8, 0, 1}}, {0x98, {8, 0, 1}},   /* BC1, BC4 */
  {0x93, {16, 0, 1}}, {0x94, {16, 0, 1}}, {0x95, {16, 0, 1}}, {0x96, {16, 0, 1}}, /* BC2, BC3 */
  {0x99, {16, 0, 1}}, {0x9a, {16, 0, 1}}, {0x9b, {16, 0, 1}}, {0x9c, {16, 0, 1}}, /* BC5, BC6H */
  {0x9d, {16, 0, 1}}, {0x9e, {16, 0, 1}},                                       /* BC7 */
  {0xb0, {2, 1, 0}}, {0xa2, {2, 1, 0}}, {0xa5, {2, 1, 0}},   /* NV12 (1.5 rounded up), NV16, YUY2 */
  {0x9f, {3, 1, 0}}, {0xa1, {3, 1, 0}},                      /* P010, P016 */
  {0x50, {4, 1, 0}}, {0xa3, {4, 1, 0}}, {0xa4, {4, 1, 0}},   /* 10:10:10:2, P210, P216 */
  {0xa6, {4, 1, 0}}, {0xa7, {4, 1, 0}}, {0xa8, {4, 1, 0}},   /* Y210, Y216, AYUV */
  {0xa9, {4, 1, 0}}, {0xb1, {8, 1, 0}},                      /* Y410, Y416 */
};
/* clang-format on */

static struct texel texel_of(int format) {
  for (size_t i = 0; i < sizeof kFormats / sizeof kFormats[0]; i++) {
    if (kFormats[i].format == format) return kFormats[i].t;
  }
  return (struct texel){4, 0, 0}; /* unknown: 4 bytes per channel */
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t level_bytes(struct texel t, uint64_t w, uint64_t h, uint64_t d, unsigned channels) {
  if (t.block) return sat_mul(sat_mul(sat_mul((w + 3) / 4, (h + 3) / 4), d), t.bytes);
  uint64_t per = t.per_texel ? t.bytes : sat_mul(t.bytes, channels ? channels : 1);
  return sat_mul(sat_mul(sat_mul(w, h), d), per);
}

static uint64_t halve(uint64_t v, unsigned level) {
  return level >= 64 || (v >> level) == 0 ? 1 : v >> level;
}

uint64_t gf_array_bytes(size_t width, size_t height, size_t depth, int format, unsigned channels, unsigned flags,
                        unsigned levels) {
  if (flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)) return 0;
  struct texel t = texel_of(format);
  int layered = (flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
  uint64_t total = 0;
  if (levels == 0) levels = 1;
  if (levels > 64) levels = 64; /* every level past 64 is 1 element: bounded by the driver anyway */
  for (unsigned l = 0; l < levels; l++) {
    uint64_t w = halve(width, l), h = height ? halve(height, l) : 1;
    uint64_t d = depth == 0 ? 1 : layered ? depth : halve(depth, l);
    if (__builtin_add_overflow(total, level_bytes(t, w, h, d, channels), &total)) return UINT64_MAX;
  }
  return total;
}
