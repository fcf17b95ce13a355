/* The add-then-check reservation (limits_abi.h). Every access is sequentially consistent. Each
 * change to used[] is counted in usage_changes after it is made; a thread that finds the count
 * where its cache left it knows no other slot changed since, and checks own + cached sum. Of two
 * racing reservations the later count in the single total order is not its thread's cache, so
 * that one sums every slot after both adds: two requests that together overflow the limit cannot
 * both pass. tests/model checks the protocol over every interleaving, with kills. */
#include "gf_region.h"

static uint64_t add_saturating(uint64_t a, uint64_t b) {
  uint64_t s;
  return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

/* Sum of used[dev] over the slots in use other than mine (-1: none is mine). The high-water mark
 * is read after the caller's change was counted: see gf_slot_claim. */
static uint64_t sum_others(const struct gpufrac_region* r, long mine, unsigned dev) {
  unsigned hw = gf_region_slots_in_use(r);
  uint64_t sum = 0;
  for (unsigned i = 0; i < hw; i++) {
    if ((long)i != mine) sum = add_saturating(sum, __atomic_load_n(&r->slots[i].used[dev], __ATOMIC_SEQ_CST));
  }
  return sum;
}

uint64_t gf_region_sum(const struct gpufrac_region* r, unsigned dev) {
  return sum_others(r, -1, dev);
}

uint64_t gf_region_count_change(struct gpufrac_region* r) {
  return __atomic_fetch_add(&r->usage_changes, 1, __ATOMIC_SEQ_CST);
}

static long slot_index(const struct gpufrac_region* r, const struct gpufrac_slot* slot) {
  return slot != NULL ? (long)(slot - r->slots) : -1;
}

static uint32_t cache_key(long mine) {
  return (uint32_t)(mine + 2);
}

static int cache_holds(const struct gf_usage_cache* c, long mine, uint64_t changes, unsigned dev) {
  return c != NULL && c->key == cache_key(mine) && c->changes == changes && (c->valid >> dev & 1u);
}

/* The caller changed only its own slot, counted as change number seen: what the cache held for
 * the other slots still holds. */
static void cache_after_own_change(struct gf_usage_cache* c, long mine, uint64_t seen) {
  if (c == NULL) return;
  if (c->key == cache_key(mine) && c->changes == seen) {
    c->changes = seen + 1;
  } else {
    c->valid = 0;
  }
}

/* others was summed after the count reached now; the other devices' entries stay only if the
 * cache was current at base (nothing but the caller's own change between base and now). */
static void cache_fill(struct gf_usage_cache* c, long mine, uint64_t base, uint64_t now, unsigned dev,
                       uint64_t others) {
  if (c == NULL) return;
  if (c->key != cache_key(mine) || c->changes != base) c->valid = 0;
  c->key = cache_key(mine);
  c->changes = now;
  c->valid |= 1u << dev;
  c->others[dev] = others;
}

/* A change the caller made to its own slot is counted unless no other slot was ever in use: a
 * process that will read this slot claims one first, after this load, and so sums after the
 * change. A process alone in its container thus pays no shared write. */
static void count_own_change(struct gpufrac_region* r, long mine, struct gf_usage_cache* cache) {
  if (gf_region_slots_in_use(r) <= 1) return;
  cache_after_own_change(cache, mine, gf_region_count_change(r));
}

/* After adding to the caller's slot (own: its new value): the container's usage on dev. */
static uint64_t usage_after_add(struct gpufrac_region* r, struct gpufrac_slot* slot, long mine, unsigned dev,
                                uint64_t own, uint64_t limit, struct gf_usage_cache* cache) {
  if (gf_region_slots_in_use(r) <= 1) return own; /* no other slot: nothing to count or sum */
  uint64_t seen = gf_region_count_change(r);
  if (cache_holds(cache, mine, seen, dev)) {
    uint64_t total = add_saturating(own, cache->others[dev]);
    if (total <= limit) {
      cache->changes = seen + 1;
      return total;
    } /* over the limit by the cache: it may hold bytes freed since, so sum */
  }
  uint64_t others = sum_others(r, mine, dev);
  cache_fill(cache, mine, seen, seen + 1, dev, others);
  return add_saturating(others, __atomic_load_n(&slot->used[dev], __ATOMIC_SEQ_CST));
}

int gf_region_reserve(struct gpufrac_region* r, struct gpufrac_slot* slot, unsigned dev, uint64_t n, uint64_t limit,
                      uint64_t* in_use, struct gf_usage_cache* cache) {
  if (n > limit) {
    *in_use = gf_region_sum(r, dev);
    return -1;
  }
  long mine = slot_index(r, slot);
  uint64_t own = __atomic_add_fetch(&slot->used[dev], n, __ATOMIC_SEQ_CST);
  uint64_t total = usage_after_add(r, slot, mine, dev, own, limit, cache);
  if (total <= limit) return 0;
  gf_region_release(r, slot, dev, n, cache);
  *in_use = total == UINT64_MAX ? total : total - n;
  return -1;
}

void gf_region_release(struct gpufrac_region* r, struct gpufrac_slot* slot, unsigned dev, uint64_t n,
                       struct gf_usage_cache* cache) {
  __atomic_fetch_sub(&slot->used[dev], n, __ATOMIC_SEQ_CST);
  count_own_change(r, slot_index(r, slot), cache);
}

/* Only a caller with a slot caches: one without could miss changes left uncounted (above). */
uint64_t gf_region_usage(struct gpufrac_region* r, const struct gpufrac_slot* slot, unsigned dev,
                         struct gf_usage_cache* cache) {
  if (slot == NULL) return gf_region_sum(r, dev);
  long mine = slot_index(r, slot);
  uint64_t own = __atomic_load_n(&slot->used[dev], __ATOMIC_SEQ_CST);
  if (gf_region_slots_in_use(r) <= 1) return own;
  uint64_t changes = __atomic_load_n(&r->usage_changes, __ATOMIC_SEQ_CST);
  if (cache_holds(cache, mine, changes, dev)) return add_saturating(own, cache->others[dev]);
  uint64_t others = sum_others(r, mine, dev);
  cache_fill(cache, mine, changes, changes, dev, others);
  return add_saturating(own, others);
}
