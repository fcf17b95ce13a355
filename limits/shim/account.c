/* The add-then-sum reservation (limits_abi.h). Every access is sequentially consistent: of two
 * racing reservations, the later add in the single total order sees the earlier one in its sum,
 * so two requests that together overflow the limit cannot both pass. */
#include "gf_region.h"

uint64_t gf_region_sum(const struct gpufrac_region* r, unsigned dev) {
  unsigned hw = gf_region_slots_in_use(r);
  uint64_t sum = 0;
  for (unsigned i = 0; i < hw; i++) {
    uint64_t v = __atomic_load_n(&r->slots[i].used[dev], __ATOMIC_SEQ_CST);
    if (__builtin_add_overflow(sum, v, &sum)) return UINT64_MAX;
  }
  return sum;
}

int gf_region_reserve(struct gpufrac_region* r, struct gpufrac_slot* slot, unsigned dev, uint64_t n, uint64_t limit,
                      uint64_t* in_use) {
  if (n > limit) {
    *in_use = gf_region_sum(r, dev);
    return -1;
  }
  __atomic_fetch_add(&slot->used[dev], n, __ATOMIC_SEQ_CST);
  uint64_t sum = gf_region_sum(r, dev); /* reads slot_high_water after the add: see claim */
  if (sum <= limit) return 0;
  __atomic_fetch_sub(&slot->used[dev], n, __ATOMIC_SEQ_CST);
  *in_use = sum == UINT64_MAX ? sum : sum - n;
  return -1;
}

void gf_region_release(struct gpufrac_slot* slot, unsigned dev, uint64_t n) {
  __atomic_fetch_sub(&slot->used[dev], n, __ATOMIC_SEQ_CST);
}
