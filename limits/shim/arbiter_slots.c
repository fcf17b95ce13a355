/* Slots of the arbiter (arbiter_abi.h, "Slots"): the host sets one up per container and GPU in the
 * slots file and frees it at release, each step a CAS on the slot's state (the host makes and removes
 * the lane files itself; tests and the stress model keep every lane in m->table, reset here); the
 * shim looks its own up by token. */
#include <string.h>

#include "gf_arbiter.h"

static int cas32(uint32_t* p, uint32_t expected, uint32_t value) {
  return __atomic_compare_exchange_n(p, &expected, value, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static int key_is(const struct gpufrac_arbiter_slot* s, const char* key) {
  return strncmp(s->key, key, GPUFRAC_ARBITER_KEY) == 0 && s->key[GPUFRAC_ARBITER_KEY - 1] == '\0';
}

/* The lane back to zero; vtime joins the others' (a new slot has no credit). */
static void reset(struct gf_arb* m, unsigned i) {
  if (m->table == NULL) return; /* lane files: the host's (limits/host/arbiter_lanes.hpp) */
  struct gpufrac_arbiter_lane* s = &m->table[i];
  uint64_t vclock = m->lease != NULL ? __atomic_load_n(&m->lease->vclock, __ATOMIC_SEQ_CST) : 0;
  __atomic_store_n(&s->vtime, vclock, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->seen_ns, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->not_before_ns, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->charged_ns, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->leases, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->claimed_ns, 0, __ATOMIC_SEQ_CST);
  for (int k = 0; k < GPUFRAC_ARBITER_HISTORY; k++) __atomic_store_n(&s->history[k], 0, __ATOMIC_SEQ_CST);
}

static void fill(struct gf_arb* m, unsigned i, const char* key, uint64_t token, uint32_t weight, uint32_t flags,
                 uint64_t created_s) {
  struct gpufrac_arbiter_slot* s = &m->slots->slots[i];
  reset(m, i);
  memset(s->key, 0, sizeof s->key);
  strncpy(s->key, key, sizeof s->key - 1);
  s->weight_ppm = weight;
  s->flags = flags;
  s->token = token;
  s->created_s = created_s;
  __atomic_store_n(&s->state, GPUFRAC_ARBITER_ACTIVE, __ATOMIC_SEQ_CST);
}

/* A free slot below the high-water mark, or a new one above it; -1 when all are taken. */
static int claim_free(struct gpufrac_arbiter_slots* a) {
  for (;;) {
    unsigned hw = gf_arbiter_slots_in_use(a);
    for (unsigned i = 0; i < hw; i++) {
      if (cas32(&a->slots[i].state, GPUFRAC_ARBITER_FREE, GPUFRAC_ARBITER_SETUP)) return (int)i;
    }
    if (hw >= GPUFRAC_ARBITER_SLOTS) return -1;
    if (cas32(&a->slot_high_water, hw, hw + 1) &&
        cas32(&a->slots[hw].state, GPUFRAC_ARBITER_FREE, GPUFRAC_ARBITER_SETUP))
      return (int)hw;
  }
}

int gf_arbiter_setup(struct gf_arb* m, const char* key, uint64_t token, uint32_t weight_ppm, uint32_t flags,
                     uint64_t created_s) {
  struct gpufrac_arbiter_slots* a = m->slots;
  unsigned hw = gf_arbiter_slots_in_use(a);
  for (unsigned i = 0; i < hw; i++) {
    struct gpufrac_arbiter_slot* s = &a->slots[i];
    if (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_ACTIVE && key_is(s, key) &&
        cas32(&s->state, GPUFRAC_ARBITER_ACTIVE, GPUFRAC_ARBITER_SETUP)) {
      s->weight_ppm = weight_ppm; /* the same container again: keep its token, history and vtime */
      s->flags = flags;
      __atomic_store_n(&s->state, GPUFRAC_ARBITER_ACTIVE, __ATOMIC_SEQ_CST);
      return (int)i;
    }
  }
  int i = claim_free(a);
  if (i >= 0) fill(m, (unsigned)i, key, token, weight_ppm, flags, created_s);
  return i;
}

int gf_arbiter_release(struct gf_arb* m, unsigned i) {
  if (i >= GPUFRAC_ARBITER_SLOTS) return 0;
  struct gpufrac_arbiter_slot* s = &m->slots->slots[i];
  uint32_t st = __atomic_load_n(&s->state, __ATOMIC_SEQ_CST);
  if (st == GPUFRAC_ARBITER_FREE || !cas32(&s->state, st, GPUFRAC_ARBITER_SETUP)) return 0;
  reset(m, i);
  s->token = 0;
  memset(s->key, 0, sizeof s->key);
  __atomic_store_n(&s->state, GPUFRAC_ARBITER_FREE, __ATOMIC_SEQ_CST);
  return 1;
}

unsigned gf_arbiter_release_key(struct gf_arb* m, const char* key) {
  unsigned hw = gf_arbiter_slots_in_use(m->slots), n = 0;
  for (unsigned i = 0; i < hw; i++) {
    const struct gpufrac_arbiter_slot* s = &m->slots->slots[i];
    if (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_FREE && key_is(s, key))
      n += (unsigned)gf_arbiter_release(m, i);
  }
  return n;
}

int gf_arbiter_find_token(const struct gpufrac_arbiter_slots* a, uint64_t token) {
  unsigned hw = gf_arbiter_slots_in_use(a);
  for (unsigned i = 0; i < hw && token != 0; i++) {
    const struct gpufrac_arbiter_slot* s = &a->slots[i];
    if (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_ACTIVE &&
        __atomic_load_n(&s->token, __ATOMIC_SEQ_CST) == token)
      return (int)i;
  }
  return -1;
}
