/* Slot claim and dead-slot reclaim (limits_abi.h): CAS on the owner word only, no lock on the
 * region's words, so a process killed at any instruction leaves at most its own slot (OWNED or
 * LOCKED) or the slot it was reclaiming (RECLAIMING), both reclaimable by whoever next finds their
 * owner dead: by pid and start time (OWNED), or by its lock byte, which the kernel unlocked when the
 * owner died (LOCKED, gf_lock.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "gf_lock.h"
#include "gf_proc.h"
#include "gf_region.h"

/* A change to used[] like any other: counted after it is made (limits_abi.h). */
static void zero_used(struct gpufrac_region* r, struct gpufrac_slot* s) {
  for (int d = 0; d < GPUFRAC_MAX_DEVICES; d++) __atomic_store_n(&s->used[d], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->compute_bypassed, 0, __ATOMIC_SEQ_CST);
  gf_region_count_change(r);
}

static int take(struct gpufrac_slot* s, uint64_t expected, uint64_t owner) {
  return __atomic_compare_exchange_n(&s->owner, &expected, owner, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* Takes free slot i for owner. With a lock descriptor the slot's byte is locked first and kept
 * (limits_abi.h, GPUFRAC_SLOT_LOCKED): from the CAS on, the owner word never names a live owner
 * whose byte is unlocked. A byte someone else holds is a slot being reclaimed (or a tenant's
 * stolen lock): skipped. */
static int take_free(struct gpufrac_region* r, unsigned i, uint64_t owner, int lock_fd) {
  if (lock_fd >= 0 && gf_slot_lock(lock_fd, i) != 0) return 0;
  if (take(&r->slots[i], 0, owner)) return 1;
  if (lock_fd >= 0) gf_slot_unlock(lock_fd, i);
  return 0;
}

/* Scans the slots in use for a free one or for this process's own slot left before an exec. */
static int claim_existing(struct gpufrac_region* r, uint64_t owner, int lock_fd) {
  unsigned hw = gf_region_slots_in_use(r);
  for (unsigned i = 0; i < hw; i++) {
    struct gpufrac_slot* s = &r->slots[i];
    uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_SEQ_CST);
    if (o == 0 && take_free(r, i, owner, lock_fd)) return (int)i;
    /* same pid and start time: our image before exec(), whose memory is gone. A LOCKED slot of
     * that image lost its lock at the exec: the reclaim before a claim frees it. */
    if (lock_fd < 0 && o == owner) {
      zero_used(r, s);
      return (int)i;
    }
  }
  return -1;
}

int gf_slot_claim_locked(struct gpufrac_region* r, uint64_t owner, int lock_fd) {
  int i = claim_existing(r, owner, lock_fd);
  if (i >= 0) return i;
  for (;;) {
    uint32_t hw = __atomic_load_n(&r->slot_high_water, __ATOMIC_SEQ_CST);
    if (hw >= GPUFRAC_MAX_SLOTS) return claim_existing(r, owner, lock_fd);
    if (!__atomic_compare_exchange_n(&r->slot_high_water, &hw, hw + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      continue;
    }
    if (take_free(r, hw, owner, lock_fd)) return (int)hw;
    /* A scanner that saw the new high-water mark took it first: look again. */
    i = claim_existing(r, owner, lock_fd);
    if (i >= 0) return i;
  }
}

int gf_slot_claim(struct gpufrac_region* r, uint64_t owner) {
  return gf_slot_claim_locked(r, owner, -1);
}

static int owner_dead(uint64_t owner, enum gf_reclaim_check check, const char* proc_root) {
  uint64_t pid = gpufrac_owner_pid(owner), start = gpufrac_owner_start(owner);
  if (pid == 0) return 1;
  if (check == GF_CHECK_PROC) return gf_proc_liveness(proc_root, pid, start) == GF_DEAD;
  if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return 1;
  if (check == GF_CHECK_SIGNAL) return 0;
  char path[4200];
  struct gf_proc_stat st;
  snprintf(path, sizeof path, "%s/%llu/stat", proc_root, (unsigned long long)pid);
  if (gf_proc_stat_read(path, &st) != 0) return 0; /* exists but unreadable: alive */
  return st.state == 'Z' || st.state == 'X' || (start != 0 && (st.start & ((1ull << 38) - 1)) != start);
}

/* CAS owner o -> mine (RECLAIMING), zero, count, CAS -> free. 0 when the owner word changed. */
static int reclaim_slot(struct gpufrac_region* r, struct gpufrac_slot* s, uint64_t o, uint64_t mine) {
  if (!take(s, o, mine)) return 0; /* someone else changed it: theirs now */
  zero_used(r, s);
  take(s, mine, 0);
  return 1;
}

/* A LOCKED slot (or a RECLAIMING one, with locks): dead when its byte can be locked, which a live
 * owner (or a live lock-holding reclaimer) prevents. The byte stays locked while the slot is
 * reclaimed, so no claimer takes it half-zeroed. An OWNED (pid) owner word found under the lock is
 * left to the pid check. */
static int reclaim_by_lock(struct gpufrac_region* r, unsigned i, uint64_t mine, int lock_fd) {
  if (gf_slot_lock(lock_fd, i) != 0) return 0;
  struct gpufrac_slot* s = &r->slots[i];
  uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_SEQ_CST);
  int done = o != 0 && gpufrac_owner_state(o) != GPUFRAC_SLOT_OWNED && reclaim_slot(r, s, o, mine);
  gf_slot_unlock(lock_fd, i);
  return done;
}

unsigned gf_region_reclaim_locked(struct gpufrac_region* r, uint64_t reclaimer, enum gf_reclaim_check check,
                                  const char* proc_root, int lock_fd, int own_slot) {
  unsigned hw = gf_region_slots_in_use(r), reclaimed = 0;
  uint64_t mine = gpufrac_owner(gpufrac_owner_pid(reclaimer), gpufrac_owner_start(reclaimer), GPUFRAC_SLOT_RECLAIMING);
  for (unsigned i = 0; i < hw; i++) {
    struct gpufrac_slot* s = &r->slots[i];
    uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_SEQ_CST);
    if (o == 0 || (int)i == own_slot) continue;
    unsigned state = (unsigned)gpufrac_owner_state(o);
    if (state == GPUFRAC_SLOT_LOCKED || (state == GPUFRAC_SLOT_RECLAIMING && lock_fd >= 0)) {
      if (lock_fd >= 0) reclaimed += (unsigned)reclaim_by_lock(r, i, mine, lock_fd);
      continue; /* without a descriptor a LOCKED slot cannot be judged: alive */
    }
    /* Slots of the reclaimer's own pid are left alone: another thread of it may be reclaiming. */
    if (gpufrac_owner_pid(o) == gpufrac_owner_pid(reclaimer) || !owner_dead(o, check, proc_root)) continue;
    reclaimed += (unsigned)reclaim_slot(r, s, o, mine);
  }
  return reclaimed;
}

unsigned gf_region_reclaim(struct gpufrac_region* r, uint64_t reclaimer, enum gf_reclaim_check check,
                           const char* proc_root) {
  return gf_region_reclaim_locked(r, reclaimer, check, proc_root, -1, -1);
}
