/* The usage region (limits_abi.h, item 2): mapping and validation, slot claim and dead-slot
 * reclaim, and the add-then-sum reservation. Shared by the shim and the host library. */
#ifndef GPUFRAC_SHIM_GF_REGION_H
#define GPUFRAC_SHIM_GF_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "gpufrac/limits_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Brings a mapped region to a valid header: fields still zero (an all-zero file) are set with a
 * CAS from 0, every process writing the same constants, so none ever waits for another. Then
 * checks magic, version, size and slot count. Returns 0, or -1 with the reason in err. */
int gf_region_init(struct gpufrac_region* r, char* err, size_t err_len);

/* Opens and maps path read-write (MAP_SHARED), refusing a file whose size is not exactly
 * sizeof(struct gpufrac_region) and one with a hole (st_blocks short of its size) that fallocate
 * cannot fill (a full filesystem: never mapped, so never a SIGBUS), then gf_region_init. Returns
 * the mapping or NULL + err. */
struct gpufrac_region* gf_region_map(const char* path, char* err, size_t err_len);

/* Slots that may be in use: [0, min(slot_high_water, GPUFRAC_MAX_SLOTS)). */
unsigned gf_region_slots_in_use(const struct gpufrac_region* r);

/* Claims a slot for owner (state OWNED): the first free slot, the slot this very process
 * (same pid and start time) left before an exec, or a new slot past the high-water mark.
 * Returns its index, or -1 when all GPUFRAC_MAX_SLOTS are taken. */
int gf_slot_claim(struct gpufrac_region* r, uint64_t owner);

/* gf_slot_claim with a lock descriptor (lock_fd >= 0: the region file opened read-write by this
 * process, its own open file description, never shared with another process): owner's state is
 * GPUFRAC_SLOT_LOCKED, and the claimed slot's lock byte is locked through lock_fd first and stays
 * locked (limits_abi.h). Slots whose byte another description holds are skipped. The caller holds
 * no other lock through lock_fd and runs no reclaim meanwhile (OFD locks never conflict with their
 * own description). lock_fd < 0 is gf_slot_claim. */
int gf_slot_claim_locked(struct gpufrac_region* r, uint64_t owner, int lock_fd);

/* How gf_region_reclaim decides that a slot's owner is dead. */
enum gf_reclaim_check {
  GF_CHECK_SIGNAL = 0, /* kill(pid, 0) fails with ESRCH: cheap, misses pid reuse and zombies */
  GF_CHECK_PROC = 1,   /* <proc_root>/<pid>/stat missing, zombie, or another start time (host) */
  GF_CHECK_BOTH = 2,   /* no such pid (ESRCH), or its <proc_root>/<pid>/stat shows a zombie or
                          another start time; a pid that exists but whose stat cannot be read
                          (hidepid) stays alive (the shim's thorough check) */
};

/* Reclaims every slot whose owner is dead (OWNED or RECLAIMING; LOCKED slots are left alone): CAS owner -> reclaimer
 * (RECLAIMING), zero used[], count the change, CAS -> 0. reclaimer is the caller's identity
 * (gpufrac_owner(pid, start, 0)); slots owned by that pid are never touched. Returns the number
 * of slots reclaimed. */
unsigned gf_region_reclaim(struct gpufrac_region* r, uint64_t reclaimer, enum gf_reclaim_check check,
                           const char* proc_root);

/* gf_region_reclaim with a lock descriptor (as gf_slot_claim_locked; -1: none): a LOCKED slot, and
 * with a descriptor a RECLAIMING one, is dead when its lock byte can be locked through lock_fd; it
 * is reclaimed under that lock. Slot own_slot (the caller's, whose byte lock_fd itself holds; -1:
 * none) is skipped. Without a descriptor LOCKED slots are left alone. OWNED slots as
 * gf_region_reclaim. Calls on one lock_fd must not overlap (one thread at a time). */
unsigned gf_region_reclaim_locked(struct gpufrac_region* r, uint64_t reclaimer, enum gf_reclaim_check check,
                                  const char* proc_root, int lock_fd, int own_slot);

/* Sum of used[dev] over all slots in use (saturating). */
uint64_t gf_region_sum(const struct gpufrac_region* r, unsigned dev);

/* One thread's view of the other slots (limits_abi.h, usage_changes): for each device in valid,
 * others[d] was the sum of every other slot's used[d] when the region's change count was changes.
 * key is the caller's slot index + 2 (1: a caller without a slot; 0: empty). Zero-initialised is
 * empty. Owned by one thread; never shared. */
struct gf_usage_cache {
  uint64_t changes;
  uint32_t key;
  uint32_t valid; /* bit d: others[d] holds */
  uint64_t others[GPUFRAC_MAX_DEVICES];
};

/* Reserves n bytes of device dev on slot: fetch_add on the slot, count the change, then decide
 * with the cache when no other slot changed since it was filled, else with the full sum (which
 * refills it); over limit, takes them back. cache may be NULL (always the full sum). Returns 0, or
 * -1 with the bytes held by the container at that moment in *in_use. */
int gf_region_reserve(struct gpufrac_region* r, struct gpufrac_slot* slot, unsigned dev, uint64_t n, uint64_t limit,
                      uint64_t* in_use, struct gf_usage_cache* cache);

/* Gives back n bytes reserved on slot and counts the change (cache may be NULL). */
void gf_region_release(struct gpufrac_region* r, struct gpufrac_slot* slot, unsigned dev, uint64_t n,
                       struct gf_usage_cache* cache);

/* Bytes of device dev in use by the container (saturating), as gf_region_sum, through the cache
 * of a caller in slot (NULL: a caller without a slot). */
uint64_t gf_region_usage(struct gpufrac_region* r, const struct gpufrac_slot* slot, unsigned dev,
                         struct gf_usage_cache* cache);

/* Counts one change to used[] (after making it); returns the count before it. */
uint64_t gf_region_count_change(struct gpufrac_region* r);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_REGION_H */
