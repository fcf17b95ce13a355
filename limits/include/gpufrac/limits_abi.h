/* The contract between the host (hook, runtime wrapper, CDI hook, `gpufrac status`) and the shim
 * libgpufrac-limits.so loaded in every container process. Two files per container, both created by
 * the host under <state-dir>/containers/<id>/ and bind-mounted into the container:
 *
 *  1. The limit file (read-only in the container, GPUFRAC_CONTAINER_LIMITS): text, one "key value"
 *     per line, '#' comments, at most GPUFRAC_MAX_DEVICES device lines:
 *        version 1
 *        container <container id>
 *        region /run/gpufrac/usage
 *        device <GPU-... or MIG-... uuid> <limit in bytes>
 *     A process whose limit file is missing runs unlimited (the shim is inert). The environment
 *     variable GPUFRAC_LIMITS_FILE names another limit file (tests, tools).
 *
 *  2. The usage region (read-write in the container, GPUFRAC_CONTAINER_USAGE): a file holding one
 *     struct gpufrac_region, mmap'd MAP_SHARED by every process of the container. An all-zero file
 *     of the right size is a valid empty region. Accounting rules (no lock anywhere):
 *       - each process claims one slot: CAS owner 0 -> gpufrac_owner(pid, start, OWNED);
 *       - allocate n bytes on device d: fetch_add(slot.used[d], n); sum used[d] over live slots
 *         [0, slot_high_water); if the sum exceeds the limit, fetch_sub and refuse with
 *         CUDA_ERROR_OUT_OF_MEMORY; otherwise call the driver and fetch_sub on its failure.
 *         Two racing requests that together overflow cannot both pass (sequentially consistent
 *         add-then-sum); near the limit both may be refused.
 *       - a SIGKILLed process leaves only its own slot, which holds exactly its committed bytes.
 *         Any process (or the host) that finds a slot whose owner is dead (pid gone, or its start
 *         time differs) claims it with CAS owner -> (self, RECLAIMING), zeroes used[], then CAS
 *         owner -> 0. A reclaimer that dies leaves RECLAIMING with a dead owner: reclaimable again.
 *     All fields are accessed with __atomic builtins (C) or std::atomic_ref (C++).
 *
 * The region layout is versioned: a reader refuses a different magic, version or size. */
#ifndef GPUFRAC_LIMITS_ABI_H
#define GPUFRAC_LIMITS_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUFRAC_LIMITS_VERSION 1
#define GPUFRAC_REGION_MAGIC 0x52465047u /* "GPFR" little-endian */
#define GPUFRAC_REGION_VERSION 1u
#define GPUFRAC_MAX_DEVICES 16
#define GPUFRAC_MAX_SLOTS 1024
#define GPUFRAC_UUID_SIZE 96

#define GPUFRAC_CONTAINER_DIR "/run/gpufrac"
#define GPUFRAC_CONTAINER_SHIM "/run/gpufrac/libgpufrac-limits.so"
#define GPUFRAC_CONTAINER_LIMITS "/run/gpufrac/limits"
#define GPUFRAC_CONTAINER_USAGE "/run/gpufrac/usage"
#define GPUFRAC_LIMITS_ENV "GPUFRAC_LIMITS_FILE"

/* Slot owner word: pid in bits 63..40, process start time (clock ticks since boot, field 22 of
 * /proc/<pid>/stat) in bits 39..2, state in bits 1..0. 0 means free. */
#define GPUFRAC_SLOT_FREE 0u
#define GPUFRAC_SLOT_OWNED 1u
#define GPUFRAC_SLOT_RECLAIMING 2u

static inline uint64_t gpufrac_owner(uint64_t pid, uint64_t start_ticks, uint64_t state) {
  return (pid << 40) | ((start_ticks & ((1ull << 38) - 1)) << 2) | (state & 3u);
}
static inline uint64_t gpufrac_owner_pid(uint64_t owner) { return owner >> 40; }
static inline uint64_t gpufrac_owner_start(uint64_t owner) { return (owner >> 2) & ((1ull << 38) - 1); }
static inline uint64_t gpufrac_owner_state(uint64_t owner) { return owner & 3u; }

struct gpufrac_slot {
  uint64_t owner;                     /* atomic; see above */
  uint64_t pad;
  uint64_t used[GPUFRAC_MAX_DEVICES]; /* atomic; bytes this process holds on each device */
  uint64_t pad_to_cache_line[6];      /* 192 bytes: slots never share a cache line */
};

struct gpufrac_region {
  uint32_t magic;        /* GPUFRAC_REGION_MAGIC once initialised (0 in a fresh zero file) */
  uint32_t version;      /* GPUFRAC_REGION_VERSION */
  uint32_t region_size;  /* sizeof(struct gpufrac_region) */
  uint32_t slot_count;   /* GPUFRAC_MAX_SLOTS */
  uint32_t device_count; /* informational copy written by the host */
  uint32_t slot_high_water; /* atomic; slots at or above this index have never been used */
  uint64_t limit[GPUFRAC_MAX_DEVICES];           /* informational copy of the limit file */
  char uuid[GPUFRAC_MAX_DEVICES][GPUFRAC_UUID_SIZE]; /* informational copy of the limit file */
  uint8_t pad[64 - ((24 + 8 * GPUFRAC_MAX_DEVICES + GPUFRAC_UUID_SIZE * GPUFRAC_MAX_DEVICES) % 64)];
  struct gpufrac_slot slots[GPUFRAC_MAX_SLOTS];
};

#ifdef __cplusplus
}
static_assert(sizeof(gpufrac_slot) == 192, "slot layout is ABI");
static_assert(sizeof(gpufrac_region) % 64 == 0, "region layout is ABI");
#else
_Static_assert(sizeof(struct gpufrac_slot) == 192, "slot layout is ABI");
_Static_assert(sizeof(struct gpufrac_region) % 64 == 0, "region layout is ABI");
#endif

#endif /* GPUFRAC_LIMITS_ABI_H */
