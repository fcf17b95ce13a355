/* The limit file (limits_abi.h, item 1): parsed from a caller-owned buffer into a fixed-size
 * structure, without allocating. Shared by the shim and the host library (one grammar). */
#ifndef GPUFRAC_SHIM_GF_CONFIG_H
#define GPUFRAC_SHIM_GF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "gpufrac/limits_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GF_CONTAINER_MAX 256
#define GF_PATH_MAX 4096
#define GF_LIMIT_FILE_MAX 16384 /* bytes; a longer file is refused */

struct gf_device_limit {
  char uuid[GPUFRAC_UUID_SIZE]; /* "GPU-..." or "MIG-...", as written */
  uint8_t bytes[16];            /* the 16 UUID octets, compared with cuDeviceGetUuid */
  uint64_t limit;               /* bytes */
  /* Compute share (docs/architecture.md "Compute share"): 0 = unmanaged (no arbiter). */
  uint32_t compute_ppm;   /* weight, parts per million of the GPU's time, 1..1000000 */
  uint8_t compute_strict; /* 1: never more than the share; 0: fair (work-conserving) */
  uint8_t priority_high;  /* 1: latency-sensitive (preempts batch work at a kernel boundary) */
  uint64_t compute_token; /* the arbiter slot's token ("arbiter" line, arbiter_abi.h); 0 none */
  /* Burstable memory: the request below the limit ("burst" line; 0: the limit is the request), and
   * the on-limit wait ("wait" line, milliseconds; 0: fail at once). */
  uint64_t request;
  uint32_t wait_ms;
};

struct gf_config {
  unsigned version;
  char container[GF_CONTAINER_MAX];
  char region[GF_PATH_MAX];
  unsigned device_count;
  struct gf_device_limit devices[GPUFRAC_MAX_DEVICES];
};

/* Parses len bytes of text. Returns 0, or -1 with a one-line reason ("line 3: ...") in err. */
int gf_config_parse(const char* text, size_t len, struct gf_config* out, char* err, size_t err_len);

/* Parses "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" or "MIG-..." (canonical 8-4-4-4-12 hex
 * groups, either case) into 16 octets. Returns 0 or -1. */
int gf_uuid_parse(const char* text, size_t len, uint8_t out[16]);

/* Formats 16 octets with the given prefix ("GPU-", "MIG-") into out (at least 41 bytes). */
void gf_uuid_format(const uint8_t bytes[16], const char* prefix, char* out, size_t out_len);

/* Index of the device whose UUID octets match, or -1. */
int gf_config_find(const struct gf_config* cfg, const uint8_t bytes[16]);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_CONFIG_H */
