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
 *        compute <uuid> <weight ppm> <fair|strict> <normal|high>   (a compute share, after its device)
 *        arbiter <uuid> <token: 16 hex digits>                     (its arbiter slot, after compute)
 *        burst <uuid> <request in bytes>       (burstable memory: the device line's limit is above
 *                                               what is booked, its request; after its device)
 *        wait <uuid> <milliseconds>            (on-limit: wait: how long an allocation past the
 *                                               limit, or that finds no room, waits; after its device)
 *        mps <uuid> <percent of the SMs>                           (an SM share: the container is an
 *                                                                   MPS client of that GPU's server)
 *     version and region are required; unknown keys are ignored (informational additions need no
 *     new version). Device line i is device i of the region: used[i], limit[i], uuid[i]. A device
 *     absent from the file is unlimited. The shim matches a CUDA device (cuDeviceGetUuid_v2) or an
 *     NVML handle (nvmlDeviceGetUUID) to a line by the 16 UUID octets. A device with compute and
 *     arbiter lines is arbitrated through <directory of region>/compute/<uuid> (arbiter_abi.h).
 *     A process whose limit file is missing runs unlimited (the shim is inert). A limit file that
 *     exists but cannot be read or parsed refuses every counted allocation (CUDA_ERROR_OUT_OF_MEMORY,
 *     one line on stderr): the limit cannot be enforced, so nothing is allocated past it.
 *     The environment variable GPUFRAC_LIMITS_FILE names another limit file (tests, tools); it is
 *     honoured only where GPUFRAC_CONTAINER_LIMITS does not exist, so a process inside a container
 *     cannot point the shim at a looser file.
 *
 *  2. The usage region (read-write in the container, GPUFRAC_CONTAINER_USAGE): a file holding one
 *     struct gpufrac_region, mmap'd MAP_SHARED by every process of the container. An all-zero file
 *     of the right size is a valid empty region: each process sets version, region_size,
 *     slot_count and then magic with a CAS from 0 to the same constants, so none waits for another.
 *     A region with another magic, version or size (or that cannot be opened read-write) refuses
 *     allocations on the limited devices, with one line on stderr; unlimited devices still work.
 *     Accounting rules (no lock anywhere):
 *       - each process claims one slot on its first counted allocation: it opens the region again
 *         (its own open file description, O_CLOEXEC), locks the slot's lock byte (F_OFD_SETLK,
 *         below; a byte someone holds is skipped), then CAS owner 0 -> gpufrac_owner(pid, start,
 *         LOCKED), lowest free slot first, else slot_high_water is raised by CAS and the new slot
 *         taken. The lock stays held until the process dies or execs: the kernel drops it with the
 *         description. A fork child closes its copy of its parent's descriptor and claims its own
 *         slot. A shim that cannot lock (no OFD locks) claims in state OWNED, judged by pid and
 *         start time: then a slot owned by the claimant's own pid and start time is what its image
 *         left before exec(): it is taken over and zeroed.
 *       - every change of any used[] (allocate, free, take back, reclaim, takeover) is followed by
 *         fetch_add(usage_changes, 1): the count of changes ever made to the region.
 *       - allocate n bytes on device d: fetch_add(slot.used[d], n); then fetch_add(usage_changes,
 *         1), which returns the count seen before this change, c. A thread may keep the sum of the
 *         other slots' used[d] it read after a change count of c' (its cache); when c == c' no
 *         other slot changed since (every other change would have counted), so own + cached sum is
 *         the container's usage. Otherwise, or when that is over the limit, load slot_high_water
 *         and sum used[d] over slots [0, slot_high_water), refilling the cache. All sequentially
 *         consistent. Over the limit, fetch_sub (a change: counted) and refuse with
 *         CUDA_ERROR_OUT_OF_MEMORY (after reclaiming dead slots and trying once more); otherwise
 *         call the driver and fetch_sub on its failure. Two racing requests that together
 *         overflow cannot both pass: the later count in the total order is not its thread's
 *         cache, so it sums every slot after both adds; near the limit both may be refused.
 *         A reservation costs O(1) in the number of processes while the other processes'
 *         usage does not change; the model check in tests/model covers every interleaving.
 *       - a report (free memory) uses the cache when the count still equals the cache's, else sums.
 *       - free: the process subtracts exactly what it added for that pointer or handle (kept in a
 *         process-local table), so a counter never goes below zero.
 *       - a SIGKILLed process leaves only its own slot, which holds exactly its committed bytes
 *         (plus at most one reservation in flight per thread).
 *         Any process (or the host) that finds a slot whose owner is dead claims it with CAS owner
 *         -> (self, RECLAIMING), zeroes used[], counts the change, then CAS owner -> 0. Dead: a
 *         LOCKED slot whose lock byte the finder can lock (it keeps the byte locked until the slot
 *         is free, so no claimer takes it half-zeroed, and a RECLAIMING slot is dead only when its
 *         byte is free too); an OWNED one whose pid is gone, a zombie, or has another start time.
 *         A reclaimer that dies leaves RECLAIMING with its byte unlocked: reclaimable again. A
 *         process never reclaims its own slot, nor OWNED slots of its own pid. Processes reclaim at
 *         slot claim (pid gone: kill(pid, 0)), before reporting memory (at most every 100 ms) and
 *         before refusing an allocation (both with the full /proc check); the host counts live
 *         slots only. A process's claims and reclaims never overlap (one lock descriptor, whose
 *         own locks never conflict with each other).
 *       - a process that exits normally keeps its slot until someone finds it dead: every death is
 *         handled by the same path.
 *     Burstable memory (docs/architecture.md "Burstable memory"): the header's reclaim and burst
 *     fields (padding before, so zero in regions no reclaimer touched; the version is unchanged)
 *     are the channel between the container's processes and the host's reclaimer:
 *       - the reclaimer stores CLOCK_MONOTONIC milliseconds (mod 2^32, never 0) in reclaimer_beat
 *         on each pass over the region (about every 50 ms); a beat older than 2 s means none runs.
 *       - for a device with a burst line it stores burst_device (the device index) and
 *         burst_ceiling: the most the container may hold there now (the GPU's memory less what
 *         the other shares book or use, whichever is more, capped at the limit). The shim lets an
 *         allocation take the container past its request only up to that ceiling, and only while
 *         the beat is fresh. Advisory: the reclaimer, not the ceiling, keeps the requests whole.
 *       - a process whose allocation the driver refused while the container stays within its
 *         request (and the beat is fresh) asks for memory back: it stores reclaim_device and
 *         reclaim_bytes, then fetch_add(reclaim_asked, 1); the reclaimer answers the latest request
 *         it read with reclaim_answer (GPUFRAC_RECLAIM_*) and then reclaim_answered = that count.
 *         The asker waits (bounded) until reclaim_answered reaches its count. Everything here is
 *         written by the container too, so the reclaimer believes none of it: it checks every
 *         request against the driver's own per-process view (a lying container gets a refusal).
 *     All fields are accessed with __atomic builtins (C and C++) or std::atomic_ref (C++).
 *
 * The region layout is versioned: a reader refuses a different magic, version or size. */
#ifndef GPUFRAC_LIMITS_ABI_H
#define GPUFRAC_LIMITS_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUFRAC_LIMITS_VERSION 1
#define GPUFRAC_REGION_MAGIC 0x52465047u /* "GPFR" little-endian */
#define GPUFRAC_REGION_VERSION 2u        /* 2: usage_changes; the layout of 1 otherwise */
#define GPUFRAC_MAX_DEVICES 16
#define GPUFRAC_MAX_SLOTS 1024
#define GPUFRAC_UUID_SIZE 96

/* reclaim_answer values. */
#define GPUFRAC_RECLAIM_FREED 1        /* a borrower was stopped; its memory is free: retry */
#define GPUFRAC_RECLAIM_RETRY 2        /* the GPU has the memory free already: retry */
#define GPUFRAC_RECLAIM_REFUSED 3      /* burst.reclaim: refuse: borrowers keep what they hold */
#define GPUFRAC_RECLAIM_NOT_OWNER 4    /* the driver sees the container past its request */
#define GPUFRAC_RECLAIM_NONE 5         /* no borrower holds memory on the GPU */
#define GPUFRAC_RECLAIM_UNTOLD 6       /* the container shares a cgroup with another: nothing taken back */
#define GPUFRAC_RECLAIMER_BEAT_MS 2000 /* a beat older than this: no reclaimer runs */

#define GPUFRAC_CONTAINER_DIR "/run/gpufrac"
#define GPUFRAC_CONTAINER_SHIM "/run/gpufrac/libgpufrac-limits.so"
#define GPUFRAC_CONTAINER_LIMITS "/run/gpufrac/limits"
#define GPUFRAC_CONTAINER_USAGE "/run/gpufrac/usage"
#define GPUFRAC_LIMITS_ENV "GPUFRAC_LIMITS_FILE"
/* An SM share's MPS pipe directory in the container (docs/architecture.md "SM sharing"): the host's
 * <state-dir>/mps/<GPU uuid>/pipe, bound read-write; the server's shm directory is bound at /dev/shm. */
#define GPUFRAC_CONTAINER_MPS_PIPE "/run/gpufrac/mps/pipe"

/* Slot owner word: pid in bits 63..40, process start time (clock ticks since boot, field 22 of
 * /proc/<pid>/stat) in bits 39..2, state in bits 1..0. 0 means free. */
#define GPUFRAC_SLOT_FREE 0u
#define GPUFRAC_SLOT_OWNED 1u /* alive while its pid has its start time (a shim without locks) */
#define GPUFRAC_SLOT_RECLAIMING 2u
#define GPUFRAC_SLOT_LOCKED 3u /* alive while its lock byte is locked (below): any PID namespace */

/* A slot's lock byte: the first byte of its owner word in the region file. The shim holds an OFD
 * write lock (fcntl F_OFD_SETLK) on it through a descriptor of its own for as long as it owns the
 * slot in state LOCKED; the kernel drops the lock when the last descriptor of that open file
 * description closes, i.e. when the process dies or execs. Anyone holding a descriptor of the
 * region (read-only is enough for F_OFD_GETLK) tells a live LOCKED slot from a dead one, whatever
 * PID namespace it and the owner run in. The lock, not the owner word, is the identity: the pid
 * and start time in a LOCKED owner word are for display only. */
static inline uint64_t gpufrac_slot_lock_offset(unsigned slot) {
  return 1728u + 192u * (uint64_t)slot; /* offsetof(struct gpufrac_region, slots[slot].owner) */
}

static inline uint64_t gpufrac_owner(uint64_t pid, uint64_t start_ticks, uint64_t state) {
  return (pid << 40) | ((start_ticks & ((1ull << 38) - 1)) << 2) | (state & 3u);
}
static inline uint64_t gpufrac_owner_pid(uint64_t owner) {
  return owner >> 40;
}
static inline uint64_t gpufrac_owner_start(uint64_t owner) {
  return (owner >> 2) & ((1ull << 38) - 1);
}
static inline uint64_t gpufrac_owner_state(uint64_t owner) {
  return owner & 3u;
}

struct gpufrac_slot {
  uint64_t owner; /* atomic; see above */
  /* Compute arbiter reports (zero in older regions): bit d set when this process ran device d's
   * launches unarbitrated because the GPU's arbiter kept it waiting past its bound (arbiter_abi.h
   * "Bound"); in the container's own region, so a tenant tampering with the shared arbiter cannot
   * erase it. `gpufrac status` flags the GPU. Cleared with used[] when the slot is reclaimed. */
  uint32_t compute_bypassed;          /* atomic */
  uint32_t compute_bypassed_s;        /* atomic: CLOCK_REALTIME seconds (mod 2^32) of the latest report */
  uint64_t used[GPUFRAC_MAX_DEVICES]; /* atomic; bytes this process holds on each device */
  uint64_t pad_to_cache_line[6];      /* 192 bytes: slots never share a cache line */
};

struct gpufrac_region {
  uint32_t magic;                      /* GPUFRAC_REGION_MAGIC once initialised (0 in a fresh zero file) */
  uint32_t version;                    /* GPUFRAC_REGION_VERSION */
  uint32_t region_size;                /* sizeof(struct gpufrac_region) */
  uint32_t slot_count;                 /* GPUFRAC_MAX_SLOTS */
  uint32_t device_count;               /* informational copy written by the host */
  uint32_t slot_high_water;            /* atomic; slots at or above this index have never been used */
  uint64_t limit[GPUFRAC_MAX_DEVICES]; /* informational copy of the limit file */
  char uuid[GPUFRAC_MAX_DEVICES][GPUFRAC_UUID_SIZE]; /* informational copy of the limit file */
  uint64_t usage_changes; /* atomic; changes ever made to any used[] (version 2; padding in 1) */
  /* Burstable memory (above; padding in regions nothing wrote them to). All atomic. */
  uint32_t reclaim_asked;    /* shim: count of reclaim requests */
  uint32_t reclaim_answered; /* reclaimer: the count it answered last */
  uint8_t reclaim_device;    /* shim: the device index of the latest request */
  uint8_t reclaim_answer;    /* reclaimer: GPUFRAC_RECLAIM_* for reclaim_answered */
  uint8_t burst_device;      /* reclaimer: the device burst_ceiling is for */
  uint8_t reserved;
  uint32_t reclaimer_beat; /* reclaimer: CLOCK_MONOTONIC ms mod 2^32 of its last pass; 0 never */
  uint64_t reclaim_bytes;  /* shim: the bytes of the latest request */
  uint64_t burst_ceiling;  /* reclaimer: the most the container may hold on burst_device now */
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
/* Version 2 kept version 1's size and slot offsets: usage_changes took padding, and so did the
 * burstable-memory fields after it. */
#ifdef __cplusplus
static_assert(sizeof(gpufrac_region) == 1728 + 192 * GPUFRAC_MAX_SLOTS, "region layout is ABI");
static_assert(offsetof(gpufrac_region, slots) == 1728, "gpufrac_slot_lock_offset");
#else
_Static_assert(sizeof(struct gpufrac_region) == 1728 + 192 * GPUFRAC_MAX_SLOTS, "region layout is ABI");
_Static_assert(offsetof(struct gpufrac_region, slots) == 1728, "gpufrac_slot_lock_offset");
#endif

#endif /* GPUFRAC_LIMITS_ABI_H */
