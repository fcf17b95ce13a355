/* Who gets the GPU next (arbiter_abi.h, "End of a lease", "Runnable", "Preemption"): start-time
 * fair queuing over the runnable slots, high priority first while within its credit. Reads only;
 * every value from the file is checked or clamped before use. */
#include "gf_arbiter.h"

int gf_lease_runnable(const struct gf_lease* l, unsigned i, uint64_t now_ns) {
  if (i >= gf_arbiter_slots_in_use(l->slots)) return 0;
  const struct gpufrac_arbiter_slot* s = &l->slots->slots[i];
  const struct gpufrac_arbiter_lane* n = &l->arb->lanes[i];
  if (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_ACTIVE) return 0;
  uint64_t seen = __atomic_load_n(&n->seen_ns, __ATOMIC_SEQ_CST);
  if (seen == 0 || (int64_t)(now_ns - seen) >= (int64_t)l->p.runnable_us * 1000) return 0;
  /* Served since it last waited (the lease went to it): nobody of it waits now. */
  if ((int64_t)(seen - __atomic_load_n(&n->claimed_ns, __ATOMIC_SEQ_CST)) <= 0) return 0;
  if (!(__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & GPUFRAC_ARBITER_STRICT)) return 1;
  return (int64_t)(now_ns - __atomic_load_n(&n->not_before_ns, __ATOMIC_SEQ_CST)) >= 0;
}

int gf_lease_high_eligible(const struct gf_lease* l, unsigned i) {
  if (i >= GPUFRAC_ARBITER_SLOTS) return 0;
  const struct gpufrac_arbiter_slot* s = &l->slots->slots[i];
  if (!(__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & GPUFRAC_ARBITER_HIGH)) return 0;
  uint64_t credit = (uint64_t)l->p.credit_ms * 1000000000u / gf_arbiter_weight(s);
  uint64_t ahead =
      __atomic_load_n(&l->arb->lanes[i].vtime, __ATOMIC_SEQ_CST) - __atomic_load_n(&l->arb->vclock, __ATOMIC_SEQ_CST);
  return (int64_t)ahead <= (int64_t)credit;
}

int gf_lease_pick(const struct gf_lease* l, uint64_t now_ns) {
  const struct gpufrac_arbiter* a = l->arb;
  unsigned hw = gf_arbiter_slots_in_use(l->slots);
  int best = -1, best_high = 0;
  uint64_t best_vt = 0;
  for (unsigned i = 0; i < hw; i++) {
    if (!gf_lease_runnable(l, i, now_ns)) continue;
    int high = gf_lease_high_eligible(l, i);
    uint64_t vt = __atomic_load_n(&a->lanes[i].vtime, __ATOMIC_SEQ_CST);
    if (best < 0 || high > best_high || (high == best_high && gf_vt_before(vt, best_vt))) {
      best = (int)i;
      best_high = high;
      best_vt = vt;
    }
  }
  return best;
}

int gf_lease_preempted(const struct gf_lease* l, uint64_t now_ns) {
  struct gpufrac_arbiter* a = l->arb;
  uint32_t p = __atomic_load_n(&a->preempt, __ATOMIC_SEQ_CST);
  if (p == 0 || l->high || p == l->slot + 1) return 0;
  if (p <= GPUFRAC_ARBITER_SLOTS && gf_lease_high_eligible(l, p - 1) && gf_lease_runnable(l, p - 1, now_ns)) return 1;
  __atomic_compare_exchange_n(&a->preempt, &p, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); /* stale: clear */
  return 0;
}

int gf_lease_alone(const struct gf_lease* l, uint64_t now_ns) {
  if (gf_lease_pick(l, now_ns) >= 0) return 0;
  for (unsigned i = 0, hw = gf_arbiter_slots_in_use(l->slots); i < hw; i++) {
    const struct gpufrac_arbiter_slot* s = &l->slots->slots[i];
    if (i != l->slot && __atomic_load_n(&s->state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_ACTIVE &&
        (__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & GPUFRAC_ARBITER_HIGH))
      return 0;
  }
  return 1;
}
