/* Slot claim and dead-slot reclaim (limits_abi.h): CAS on the owner word only, no lock, so a
 * process killed at any instruction leaves at most its own slot (OWNED) or the slot it was
 * reclaiming (RECLAIMING), both reclaimable by whoever next finds their owner dead. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

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

/* Scans the slots in use for a free one or for this process's own slot left before an exec. */
static int claim_existing(struct gpufrac_region* r, uint64_t owner) {
  unsigned hw = gf_region_slots_in_use(r);
  for (unsigned i = 0; i < hw; i++) {
    struct gpufrac_slot* s = &r->slots[i];
    uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_SEQ_CST);
    if (o == 0 && take(s, 0, owner)) return (int)i;
    if (o == owner) { /* same pid and start time: our image before exec(), whose memory is gone */
      zero_used(r, s);
      return (int)i;
    }
  }
  return -1;
}

int gf_slot_claim(struct gpufrac_region* r, uint64_t owner) {
  int i = claim_existing(r, owner);
  if (i >= 0) return i;
  for (;;) {
    uint32_t hw = __atomic_load_n(&r->slot_high_water, __ATOMIC_SEQ_CST);
    if (hw >= GPUFRAC_MAX_SLOTS) return claim_existing(r, owner);
    if (!__atomic_compare_exchange_n(&r->slot_high_water, &hw, hw + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      continue;
    }
    if (take(&r->slots[hw], 0, owner)) return (int)hw;
    /* A scanner that saw the new high-water mark took it first: look again. */
    i = claim_existing(r, owner);
    if (i >= 0) return i;
  }
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

unsigned gf_region_reclaim(struct gpufrac_region* r, uint64_t reclaimer, enum gf_reclaim_check check,
                           const char* proc_root) {
  unsigned hw = gf_region_slots_in_use(r), reclaimed = 0;
  uint64_t mine = gpufrac_owner(gpufrac_owner_pid(reclaimer), gpufrac_owner_start(reclaimer), GPUFRAC_SLOT_RECLAIMING);
  for (unsigned i = 0; i < hw; i++) {
    struct gpufrac_slot* s = &r->slots[i];
    uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_SEQ_CST);
    /* Slots of the reclaimer's own pid are left alone: another thread of it may be reclaiming. */
    if (o == 0 || gpufrac_owner_pid(o) == gpufrac_owner_pid(reclaimer) || !owner_dead(o, check, proc_root)) continue;
    if (!take(s, o, mine)) continue; /* someone else changed it: theirs now */
    zero_used(r, s);
    take(s, mine, 0);
    reclaimed++;
  }
  return reclaimed;
}
