/* The model of the usage-region protocol explored by usage_model.c: state, one step of a
 * process, kills, the host's reclaim, the configurations and the mutants. */
#ifndef GPUFRAC_TESTS_MODEL_USAGE_MODEL_H
#define GPUFRAC_TESTS_MODEL_USAGE_MODEL_H

#include <stdint.h>
#include <stdio.h>

#define MAXP 3        /* processes; also slots */
#define MAX_OPS 6     /* script length per process */
#define NO_SLOT 0xffu /* a process that has not claimed a slot */
#define OWNER_RECLAIMING 0x80u

/* One line of a process's script: allocate `bytes` and hold it, free the last held allocation,
 * report the container's usage, or reclaim dead slots. */
struct op {
  char kind; /* 'A', 'F', 'R', 'C'; 0 ends the script */
  uint8_t bytes;
};

struct config {
  const char* name;
  int procs;
  unsigned limit;
  int kills;
  struct op script[MAXP][MAX_OPS];
};
extern const struct config model_configs[]; /* ends with procs == 0 */

/* The thread cache of account.c (struct gf_usage_cache) for one device. */
struct model_cache {
  uint8_t key; /* slot + 2; 0 empty */
  uint8_t valid;
  uint16_t changes;
  uint16_t others;
} __attribute__((packed));

struct proc {
  uint8_t alive, slot, op, pc, kind, n;
  uint8_t held[MAX_OPS], nheld; /* what the driver holds for it, in allocation order */
  uint8_t hw, i, cand, reclaim_i, owner_seen, purpose;
  uint16_t own, acc, seen, base, total;
  uint8_t report_active, report_quiet, report_done, result_ok;
  uint16_t value;
  struct model_cache c;
} __attribute__((packed));

struct state {
  uint16_t used[MAXP]; /* slot.used[0] */
  uint8_t owner[MAXP]; /* 0 free; p + 1 owned by process p; | OWNER_RECLAIMING */
  uint8_t dirty[MAXP]; /* ghost: a change made to the slot and not yet counted */
  uint8_t hw;          /* slot_high_water */
  uint16_t changes;    /* usage_changes */
  uint8_t kills_left;
  struct proc p[MAXP];
} __attribute__((packed));

enum mutant {
  M_NONE,
  M_NO_COUNT_RESERVE, /* a reservation loads the count instead of counting its change */
  M_NO_COUNT_RELEASE, /* a free is never counted */
  M_NO_COUNT_RECLAIM, /* a reclaim zeroes without counting */
  M_COUNT_BEFORE_ADD, /* a reservation counts, then adds */
  M_CACHE_UNCHECKED,  /* the cache is trusted whatever the count */
  M_HW_BEFORE_ADD,    /* a reservation reads the high-water mark before its add */
  M_COUNT,
};
#define MUTANT_NAMES \
  "none, no-count-reserve, no-count-release, no-count-reclaim, count-before-add, cache-unchecked, hw-before-add"
const char* mutant_name(enum mutant m);
int mutant_parse(const char* name, enum mutant* m);

void model_init(struct state* s, const struct config* c);
/* Runs process p up to and including its next access to shared state. 0 when it has none left
 * (finished or dead). A report that completes sets report_done (the caller checks and clears). */
int model_step(struct state* s, int p, enum mutant m);
/* SIGKILL: the driver frees what p held; its slot stays. 0 when p is already dead. */
int model_kill(struct state* s, int p);
/* The host's reclaim of every slot whose owner is dead, all at once. */
void model_host_reclaim(struct state* s);
/* Process p runs one report / one reservation of n bytes with no other process moving. */
unsigned model_report_now(struct state* s, int p, enum mutant m);
int model_reserve_now(struct state* s, int p, unsigned n, enum mutant m);

unsigned model_slot_sum(const struct state* s);
unsigned model_held(const struct proc* q);
void model_dump(const struct state* s, FILE* out);

#endif
