/* A process-local, lock-free map from a 64-bit key (device pointer, array, VMM handle, pool) to a
 * 64-bit value, for the shim's hot path: one CAS to insert, one CAS to remove, no allocation
 * except when a level fills up. Open addressing with a bounded probe window per level; levels
 * double in size and are mmap'd on first use, so a lookup costs at most
 * GF_TABLE_PROBES x (levels in use) loads. Keys never move; a removed key leaves a tombstone that
 * a later insert reuses. */
#ifndef GPUFRAC_SHIM_GF_TABLE_H
#define GPUFRAC_SHIM_GF_TABLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GF_TABLE_LEVELS 12 /* 4 Ki entries in level 0 ... 8 Mi in level 11: 16 Mi in all */
#define GF_TABLE_LEVEL0_BITS 12
#define GF_TABLE_PROBES 32

struct gf_table_entry {
  uint64_t key; /* atomic; 0 empty, 1 tombstone, else key ^ salt */
  uint64_t val; /* atomic */
};

struct gf_table {
  struct gf_table_entry* levels[GF_TABLE_LEVELS]; /* atomic; published with CAS */
};

/* Returns 0, or -1 when the key cannot be stored (every level full, or no memory). */
int gf_table_insert(struct gf_table* t, uint64_t key, uint64_t val);
/* Removes key; returns 1 and its value, or 0 when absent (or removed concurrently). */
int gf_table_remove(struct gf_table* t, uint64_t key, uint64_t* val);
/* Looks key up without removing it. Returns 1 and its value, or 0. */
int gf_table_find(struct gf_table* t, uint64_t key, uint64_t* val);
/* Empties the table and unmaps its levels. Only for a single-threaded caller (fork child). */
void gf_table_forget(struct gf_table* t);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_TABLE_H */
