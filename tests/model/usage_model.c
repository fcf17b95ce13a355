/* Exhaustive model check of the usage-region protocol (limits_abi.h; limits/shim/account.c and
 * slots.c): every interleaving of a few processes' reservations, frees, reports and reclaims, one
 * atomic access per step, with SIGKILL possible before any step. The steps below mirror the C
 * code line by line; a change to the protocol changes both.
 *
 * Checked in every reachable state:
 *   - safety: the bytes the driver holds for live processes never exceed the limit;
 *   - a report that ran while no other slot changed and no change was left uncounted returns the
 *     exact sum of all slots (reports concurrent with changes may see them or not);
 * and once every process has finished or died and the host reclaimed the dead:
 *   - exactness: each live process's slot holds exactly what the driver holds for it, a dead
 *     process's slot holds 0;
 *   - no leak: every survivor's report (through its cache) is that sum, and a reservation of the
 *     whole remaining room succeeds.
 * Visited states are kept as 64-bit hashes (as SPIN's hash-compact mode): a collision could only
 * prune a state, never report a false violation.
 *
 * usage_model [--mutant=NAME] [--expect-violation] [--safety-only]: explores the built-in
 * configurations; exit 0 when none violates (or, with --expect-violation, when one does), 1
 * otherwise. The mutants break one rule each, so the test can be seen to fail; --safety-only
 * checks the limit alone, to see that the reservation mutants break the limit itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usage_model.h"

static struct config cfg;
static enum mutant mutant;
static int safety_only; /* --safety-only: only the limit is checked (a mutant must break it) */
static uint64_t* seen_table;
static uint64_t seen_mask, states, violations;
static const char* violation_text;

static uint64_t hash_state(const struct state* s) {
  const unsigned char* b = (const unsigned char*)s;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof *s; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h | 1; /* 0 marks an empty table entry */
}

/* 1 when s was not seen before (and records it). */
static int first_visit(const struct state* s) {
  if (states > seen_mask / 2) {
    fprintf(stderr, "usage_model: more than %llu states in %s; make the configuration smaller\n",
            (unsigned long long)states, cfg.name);
    exit(2);
  }
  uint64_t h = hash_state(s);
  for (uint64_t i = h & seen_mask;; i = (i + 1) & seen_mask) {
    if (seen_table[i] == h) return 0;
    if (seen_table[i] == 0) {
      seen_table[i] = h;
      return 1;
    }
  }
}

static void violated(const char* what, const struct state* s) {
  if (violations++ == 0) {
    violation_text = what;
    fprintf(stderr, "usage_model: %s (config %s, mutant %s)\n", what, cfg.name, mutant_name(mutant));
    model_dump(s, stderr);
  }
}

static void check_state(const struct state* s) {
  unsigned held = 0;
  for (int p = 0; p < cfg.procs; p++) held += s->p[p].alive ? model_held(&s->p[p]) : 0;
  if (held > cfg.limit) violated("the driver holds more than the limit", s);
}

/* A report that has just completed: exact if nothing changed while it ran. */
static void check_report(struct state* s, int p) {
  struct proc* q = &s->p[p];
  if (!q->report_done) return;
  q->report_done = 0;
  if (!safety_only && q->report_quiet && q->value != model_slot_sum(s)) {
    fprintf(stderr, "usage_model: process %d reported %u; the slots sum to %u\n", p, q->value, model_slot_sum(s));
    violated("a report without concurrent changes differs from the sum of the slots", s);
  }
}

static void check_final(struct state s) {
  if (safety_only) return;
  model_host_reclaim(&s);
  for (int i = 0; i < s.hw; i++) {
    unsigned want = s.owner[i] == 0 ? 0 : model_held(&s.p[s.owner[i] - 1]);
    if (s.used[i] != want) violated("a slot does not hold what its process holds", &s);
  }
  for (int p = 0; p < cfg.procs; p++) {
    if (!s.p[p].alive || s.p[p].slot == NO_SLOT) continue;
    struct state t = s;
    if (model_report_now(&t, p, mutant) != model_slot_sum(&s)) violated("a survivor's report is not the sum", &s);
    if (!model_reserve_now(&t, p, cfg.limit - model_slot_sum(&s), mutant)) {
      violated("the remaining room cannot be reserved", &s);
    }
  }
}

static void explore(const struct state* s) {
  if (violations > 0 || !first_visit(s)) return;
  states++;
  check_state(s);
  int moved = 0;
  for (int p = 0; p < cfg.procs; p++) {
    struct state t = *s;
    if (model_step(&t, p, mutant)) {
      moved = 1;
      check_report(&t, p);
      explore(&t);
    }
    t = *s;
    if (s->kills_left > 0 && model_kill(&t, p)) explore(&t);
  }
  if (!moved) check_final(*s);
}

static int run_config(const struct config* c) {
  cfg = *c;
  memset(seen_table, 0, (seen_mask + 1) * sizeof *seen_table);
  states = 0;
  struct state s;
  model_init(&s, &cfg);
  explore(&s);
  printf("%-28s %10llu states  %s\n", cfg.name, (unsigned long long)states, violations ? "VIOLATION" : "ok");
  return violations == 0;
}

int main(int argc, char** argv) {
  int expect_violation = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--mutant=", 9) == 0) {
      if (!mutant_parse(argv[i] + 9, &mutant)) {
        fprintf(stderr, "usage_model: --mutant: unknown %s; accepted: %s\n", argv[i] + 9, MUTANT_NAMES);
        return 2;
      }
    } else if (strcmp(argv[i], "--expect-violation") == 0) {
      expect_violation = 1;
    } else if (strcmp(argv[i], "--safety-only") == 0) {
      safety_only = 1;
    } else {
      fprintf(stderr, "usage: usage_model [--mutant=NAME] [--expect-violation] [--safety-only]\n");
      return 2;
    }
  }
  seen_mask = (1ull << 24) - 1;
  seen_table = calloc(seen_mask + 1, sizeof *seen_table);
  if (seen_table == NULL) return perror("usage_model"), 2;
  int all_ok = 1;
  for (const struct config* c = model_configs; c->procs != 0 && all_ok; c++) all_ok = run_config(c);
  free(seen_table);
  if (expect_violation) {
    if (!all_ok)
      printf("found as expected: %s\n", violation_text);
    else
      printf("usage_model: mutant %s: no violation found\n", mutant_name(mutant));
    return all_ok ? 1 : 0;
  }
  return all_ok ? 0 : 1;
}
