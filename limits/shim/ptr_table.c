/* The lock-free pointer table (gf_table.h). */
#include <stddef.h>
#include <sys/mman.h>

#include "gf_table.h"

#define GF_EMPTY 0ull
#define GF_TOMB 1ull
#define GF_SALT 0xa5a5a5a5a5a5a5a4ull /* keys 0 and 1 (null handles) stay storable */

static unsigned level_bits(int l) {
  return GF_TABLE_LEVEL0_BITS + (unsigned)l;
}

static struct gf_table_entry* level(struct gf_table* t, int l, int create) {
  struct gf_table_entry* p = __atomic_load_n(&t->levels[l], __ATOMIC_ACQUIRE);
  if (p != NULL || !create) return p;
  size_t bytes = sizeof(struct gf_table_entry) << level_bits(l);
  void* m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return NULL;
  struct gf_table_entry* expected = NULL;
  if (__atomic_compare_exchange_n(&t->levels[l], &expected, (struct gf_table_entry*)m, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    return (struct gf_table_entry*)m;
  }
  munmap(m, bytes);
  return expected;
}

static size_t slot_of(uint64_t enc, int l, unsigned i) {
  unsigned bits = level_bits(l);
  uint64_t h = (enc * 0x9e3779b97f4a7c15ull) >> (64 - bits);
  return (size_t)((h + i) & ((1ull << bits) - 1));
}

int gf_table_insert(struct gf_table* t, uint64_t key, uint64_t val) {
  uint64_t enc = key ^ GF_SALT;
  if (enc == GF_EMPTY || enc == GF_TOMB) return -1;
  for (int l = 0; l < GF_TABLE_LEVELS; l++) {
    struct gf_table_entry* tab = level(t, l, 1);
    if (tab == NULL) return -1;
    for (unsigned i = 0; i < GF_TABLE_PROBES; i++) {
      struct gf_table_entry* e = &tab[slot_of(enc, l, i)];
      uint64_t k = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
      if ((k == GF_EMPTY || k == GF_TOMB) &&
          __atomic_compare_exchange_n(&e->key, &k, enc, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        __atomic_store_n(&e->val, val, __ATOMIC_RELEASE);
        return 0;
      }
    }
  }
  return -1;
}

/* Finds the entry holding key: a key never lies beyond an empty entry of its probe window. */
static struct gf_table_entry* lookup(struct gf_table* t, uint64_t enc) {
  for (int l = 0; l < GF_TABLE_LEVELS; l++) {
    struct gf_table_entry* tab = level(t, l, 0);
    if (tab == NULL) return NULL;
    for (unsigned i = 0; i < GF_TABLE_PROBES; i++) {
      struct gf_table_entry* e = &tab[slot_of(enc, l, i)];
      uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
      if (k == enc) return e;
      if (k == GF_EMPTY) break;
    }
  }
  return NULL;
}

int gf_table_remove(struct gf_table* t, uint64_t key, uint64_t* val) {
  uint64_t enc = key ^ GF_SALT;
  if (enc == GF_EMPTY || enc == GF_TOMB) return 0;
  struct gf_table_entry* e = lookup(t, enc);
  if (e == NULL) return 0;
  uint64_t v = __atomic_load_n(&e->val, __ATOMIC_ACQUIRE);
  uint64_t k = enc;
  if (!__atomic_compare_exchange_n(&e->key, &k, GF_TOMB, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return 0;
  *val = v;
  return 1;
}

int gf_table_find(struct gf_table* t, uint64_t key, uint64_t* val) {
  uint64_t enc = key ^ GF_SALT;
  if (enc == GF_EMPTY || enc == GF_TOMB) return 0;
  struct gf_table_entry* e = lookup(t, enc);
  if (e == NULL) return 0;
  *val = __atomic_load_n(&e->val, __ATOMIC_ACQUIRE);
  return 1;
}

void gf_table_forget(struct gf_table* t) {
  for (int l = 0; l < GF_TABLE_LEVELS; l++) {
    struct gf_table_entry* p = __atomic_exchange_n(&t->levels[l], NULL, __ATOMIC_ACQ_REL);
    if (p != NULL) munmap(p, sizeof(struct gf_table_entry) << level_bits(l));
  }
}
