/* One step of a process in the model: the protocol of limits/shim/account.c and slots.c with one
 * shared access per step (local computation is folded into the step before it). Slot claim is
 * abstracted to one atomic "take the lowest free slot below the high-water mark" plus the CAS
 * that raises the mark: what matters to the sums is that the mark rises before the slot is used.
 * Not modelled: the takeover of a slot by the same process after exec (a zeroing counted like a
 * reclaim's, covered by the unit test ReclaimAndTakeoverAreCountedChanges) and more than one device
 * (the cache's per-device bits: unit test ACacheServesOnlyWhileNoOtherSlotChanged). */
#include <string.h>

#include "usage_model.h"

enum pc {
  P_START,
  P_CLAIM_SCAN,
  P_CLAIM_RAISE,
  P_CLAIM_TAKE,
  P_RES_ADD,
  P_RES_HW,
  P_RES_COUNT,
  P_HOLD,
  P_MUT_COUNT_FIRST,
  P_MUT_HW_FIRST,
  P_SUM_HW,
  P_SUM_LOOP,
  P_SUM_OWN,
  P_FREE_DRIVER,
  P_SUB,
  P_CNT_HW,
  P_CNT_BUMP,
  P_REP_OWN,
  P_REP_HW,
  P_REP_G,
  P_RC_SCAN,
  P_RC_CAS,
  P_RC_ZERO,
  P_RC_COUNT,
  P_RC_FREE,
  P_OP_END,
};
enum { FOR_RESERVE = 1, FOR_REPORT = 2 };

static const struct config* g_cfg;

void model_init(struct state* s, const struct config* c) {
  g_cfg = c;
  memset(s, 0, sizeof *s);
  s->kills_left = (uint8_t)c->kills;
  for (int p = 0; p < c->procs; p++) {
    s->p[p].alive = 1;
    s->p[p].slot = NO_SLOT;
  }
}

unsigned model_slot_sum(const struct state* s) {
  unsigned sum = 0;
  for (int i = 0; i < s->hw; i++) sum += s->used[i];
  return sum;
}

unsigned model_held(const struct proc* q) {
  unsigned sum = 0;
  for (int i = 0; i < q->nheld; i++) sum += q->held[i];
  return sum;
}

static int mine(const struct proc* q) {
  return q->slot == NO_SLOT ? -1 : q->slot;
}

/* ---- the thread cache, as account.c ---- */
static int cache_holds(const struct proc* q, uint16_t changes, enum mutant m) {
  if (q->c.key != mine(q) + 2 || !q->c.valid) return 0;
  return m == M_CACHE_UNCHECKED || q->c.changes == changes;
}
static void cache_after_own_change(struct proc* q, uint16_t seen) {
  if (q->c.key == mine(q) + 2 && q->c.changes == seen) {
    q->c.changes = (uint16_t)(seen + 1);
  } else {
    q->c.valid = 0;
  }
}
static void cache_fill(struct proc* q, uint16_t now, uint16_t others) {
  q->c.key = (uint8_t)(mine(q) + 2);
  q->c.changes = now;
  q->c.valid = 1;
  q->c.others = others;
}

/* Any write to a slot, the count or the mark: reports running elsewhere were not quiet. */
static void disturb(struct state* s, int p) {
  for (int q = 0; q < g_cfg->procs; q++) {
    if (q != p) s->p[q].report_quiet = 0;
  }
}

static int any_dirty(const struct state* s) {
  for (int i = 0; i < MAXP; i++) {
    if (s->dirty[i]) return 1;
  }
  return 0;
}

static uint8_t reserve_entry(enum mutant m) {
  return m == M_HW_BEFORE_ADD ? P_MUT_HW_FIRST : m == M_COUNT_BEFORE_ADD ? P_MUT_COUNT_FIRST : P_RES_ADD;
}

static void begin_op(struct state* s, struct proc* q, const struct op* o, enum mutant m) {
  q->kind = (uint8_t)o->kind;
  q->n = o->bytes;
  switch (o->kind) {
    case 'A':
      q->pc = q->slot == NO_SLOT ? P_CLAIM_SCAN : reserve_entry(m);
      break;
    case 'F':
      q->pc = q->nheld > 0 ? P_FREE_DRIVER : P_OP_END;
      break;
    case 'R':
      q->report_active = 1;
      q->report_quiet = !any_dirty(s);
      q->acc = 0;
      q->pc = q->slot == NO_SLOT ? P_SUM_HW : P_REP_OWN;
      q->purpose = FOR_REPORT;
      break;
    default:
      q->reclaim_i = 0;
      q->hw = s->hw;
      q->pc = P_RC_SCAN;
      break;
  }
}

static void end_report(struct proc* q, unsigned value) {
  q->value = (uint16_t)value;
  q->report_active = 0;
  q->report_done = 1;
  q->pc = P_OP_END;
}

/* After the reservation's sum (total): take it or give it back (gf_region_reserve). */
static void decide(struct proc* q, unsigned total) {
  q->total = (uint16_t)total;
  q->result_ok = total <= g_cfg->limit;
  q->pc = q->result_ok ? P_HOLD : P_SUB;
}

/* The sum over the other slots is done: the caller's purpose decides what follows. */
static void sum_done(struct proc* q) {
  if (q->slot != NO_SLOT) cache_fill(q, q->purpose == FOR_RESERVE ? (uint16_t)(q->seen + 1) : q->seen, q->acc);
  if (q->purpose == FOR_RESERVE) {
    q->pc = P_SUM_OWN;
  } else {
    end_report(q, (unsigned)(q->slot == NO_SLOT ? 0 : q->own) + q->acc);
  }
}

/* Slot claim and reclaim (slots.c). 1: one shared access done; 0: local move; -1: not mine. */
static int step_claim_reclaim(struct state* s, int p, enum mutant m) {
  struct proc* q = &s->p[p];
  switch (q->pc) {
    case P_CLAIM_SCAN:
      for (int i = 0; i < s->hw; i++) {
        if (s->owner[i] == 0) {
          s->owner[i] = (uint8_t)(p + 1);
          q->slot = (uint8_t)i;
          q->pc = reserve_entry(m);
          return 1;
        }
      }
      q->pc = P_CLAIM_RAISE;
      return 1;
    case P_CLAIM_RAISE:
      if (s->hw >= MAXP) { /* no slot: the reservation is refused */
        q->result_ok = 0;
        q->pc = P_OP_END;
        return 1;
      }
      q->cand = s->hw++;
      disturb(s, p);
      q->pc = P_CLAIM_TAKE;
      return 1;
    case P_CLAIM_TAKE:
      if (s->owner[q->cand] == 0) {
        s->owner[q->cand] = (uint8_t)(p + 1);
        q->slot = q->cand;
        q->pc = reserve_entry(m);
      } else {
        q->pc = P_CLAIM_SCAN; /* a scanner took it first: look again */
      }
      return 1;
    case P_RC_SCAN: {
      if (q->reclaim_i >= q->hw) {
        q->pc = P_OP_END;
        return 0;
      }
      uint8_t o = s->owner[q->reclaim_i];
      int owner_proc = (o & ~OWNER_RECLAIMING) - 1;
      if (o != 0 && owner_proc != p && !s->p[owner_proc].alive) {
        q->owner_seen = o;
        q->pc = P_RC_CAS;
      } else {
        q->reclaim_i++;
      }
      return 1;
    }
    case P_RC_CAS:
      if (s->owner[q->reclaim_i] == q->owner_seen) {
        s->owner[q->reclaim_i] = (uint8_t)(OWNER_RECLAIMING | (p + 1));
        q->pc = P_RC_ZERO;
      } else {
        q->reclaim_i++;
        q->pc = P_RC_SCAN;
      }
      return 1;
    case P_RC_ZERO:
      s->used[q->reclaim_i] = 0;
      s->dirty[q->reclaim_i] = 1;
      disturb(s, p);
      q->pc = P_RC_COUNT;
      return 1;
    case P_RC_COUNT:
      if (m != M_NO_COUNT_RECLAIM) s->changes++;
      s->dirty[q->reclaim_i] = 0;
      disturb(s, p);
      q->pc = P_RC_FREE;
      return 1;
    case P_RC_FREE:
      if (s->owner[q->reclaim_i] == (uint8_t)(OWNER_RECLAIMING | (p + 1))) s->owner[q->reclaim_i] = 0;
      q->reclaim_i++;
      q->pc = P_RC_SCAN;
      return 1;
    default:
      return -1;
  }
}

/* Reservation, free and report (account.c): 1 shared access done, 0 local move. */
static int step_reserve_report(struct state* s, int p, enum mutant m) {
  struct proc* q = &s->p[p];
  int me = mine(q);
  switch (q->pc) {
    case P_MUT_HW_FIRST: /* mutant: the mark read before the add */
      q->hw = s->hw;
      q->pc = P_RES_ADD;
      return 1;
    case P_MUT_COUNT_FIRST: /* mutant: counted before the add */
      q->seen = s->changes++;
      disturb(s, p);
      q->pc = P_RES_ADD;
      return 1;
    case P_RES_ADD:
      s->used[me] = (uint16_t)(s->used[me] + q->n);
      q->own = s->used[me];
      s->dirty[me] = m == M_COUNT_BEFORE_ADD ? 0 : 1;
      disturb(s, p);
      q->pc = m == M_HW_BEFORE_ADD || m == M_COUNT_BEFORE_ADD ? P_RES_COUNT : P_RES_HW;
      if (m == M_HW_BEFORE_ADD && q->hw <= 1) {
        s->dirty[me] = 0;
        decide(q, q->own);
      }
      return 1;
    case P_RES_HW:
      if (s->hw <= 1) { /* no other slot: nothing to count or sum */
        s->dirty[me] = 0;
        decide(q, q->own);
      } else {
        q->pc = P_RES_COUNT;
      }
      return 1;
    case P_RES_COUNT: {
      int counted_already = m == M_COUNT_BEFORE_ADD;
      if (!counted_already) {
        q->seen = s->changes;
        if (m != M_NO_COUNT_RESERVE) s->changes++;
        s->dirty[me] = 0;
        disturb(s, p);
      }
      if (cache_holds(q, q->seen, m) && q->own + q->c.others <= g_cfg->limit) {
        q->c.changes = (uint16_t)(q->seen + 1);
        decide(q, q->own + q->c.others);
      } else {
        q->purpose = FOR_RESERVE;
        q->pc = P_SUM_HW;
      }
      return counted_already ? 0 : 1;
    }
    case P_SUM_HW:
      q->hw = s->hw;
      q->i = 0;
      q->acc = 0;
      q->pc = P_SUM_LOOP;
      return 1;
    case P_SUM_LOOP:
      while (q->i < q->hw && q->i == me) q->i++;
      if (q->i >= q->hw) {
        sum_done(q);
        return 0;
      }
      q->acc = (uint16_t)(q->acc + s->used[q->i++]);
      return 1;
    case P_SUM_OWN:
      decide(q, (unsigned)q->acc + s->used[me]);
      return 1;
    case P_HOLD: /* the driver call succeeded */
      q->held[q->nheld++] = q->n;
      q->pc = P_OP_END;
      return 1;
    case P_FREE_DRIVER: /* the driver frees, then the shim gives the bytes back */
      q->n = q->held[--q->nheld];
      q->held[q->nheld] = 0;
      q->pc = P_SUB;
      return 1;
    case P_SUB:
      s->used[me] = (uint16_t)(s->used[me] - q->n);
      s->dirty[me] = 1;
      disturb(s, p);
      q->pc = P_CNT_HW;
      return 1;
    case P_CNT_HW:
      if (s->hw <= 1 || m == M_NO_COUNT_RELEASE) {
        s->dirty[me] = 0;
        q->pc = P_OP_END;
      } else {
        q->pc = P_CNT_BUMP;
      }
      return 1;
    case P_CNT_BUMP:
      cache_after_own_change(q, s->changes++);
      s->dirty[me] = 0;
      disturb(s, p);
      q->pc = P_OP_END;
      return 1;
    case P_REP_OWN:
      q->own = s->used[me];
      q->pc = P_REP_HW;
      return 1;
    case P_REP_HW:
      if (s->hw <= 1) {
        end_report(q, q->own);
      } else {
        q->pc = P_REP_G;
      }
      return 1;
    case P_REP_G:
      q->seen = s->changes;
      if (cache_holds(q, q->seen, m)) {
        end_report(q, (unsigned)q->own + q->c.others);
      } else {
        q->pc = P_SUM_HW;
      }
      return 1;
    default:
      return -1;
  }
}

/* An operation's locals are dead once it ends: cleared, so equal states compare equal. */
static void forget_locals(struct proc* q) {
  q->kind = q->n = q->hw = q->i = q->cand = q->reclaim_i = q->owner_seen = q->purpose = 0;
  q->own = q->acc = q->seen = q->base = q->total = 0;
  q->report_active = q->report_quiet = q->result_ok = 0;
  q->value = 0;
}

int model_step(struct state* s, int p, enum mutant m) {
  struct proc* q = &s->p[p];
  if (!q->alive) return 0;
  for (;;) {
    if (q->pc == P_START) {
      if (q->op >= MAX_OPS || g_cfg->script[p][q->op].kind == 0) return 0;
      begin_op(s, q, &g_cfg->script[p][q->op], m);
      continue;
    }
    if (q->pc == P_OP_END) {
      if (q->op == 0xff) return 0; /* a synthetic operation (model_*_now) ends here */
      forget_locals(q);
      q->op++;
      q->pc = P_START;
      continue;
    }
    int r = step_claim_reclaim(s, p, m);
    if (r < 0) r = step_reserve_report(s, p, m);
    if (r == 1 || q->report_done) return 1; /* a completed report is checked before anything else moves */
  }
}

int model_kill(struct state* s, int p) {
  struct proc* q = &s->p[p];
  if (!q->alive) return 0;
  s->kills_left--;
  q->alive = 0;
  q->nheld = 0; /* the driver frees a dead process's memory */
  memset(q->held, 0, sizeof q->held);
  forget_locals(q);
  q->pc = P_START;
  q->op = 0;
  q->slot = NO_SLOT;
  q->c = (struct model_cache){0, 0, 0, 0};
  return 1;
}

void model_host_reclaim(struct state* s) {
  for (int i = 0; i < s->hw; i++) {
    uint8_t o = s->owner[i];
    if (o == 0 || s->p[(o & ~OWNER_RECLAIMING) - 1].alive) continue;
    s->used[i] = 0;
    s->changes++;
    s->dirty[i] = 0;
    s->owner[i] = 0;
  }
}

static void run_now(struct state* s, int p, char kind, unsigned n, enum mutant m) {
  struct proc* q = &s->p[p];
  struct op o = {kind, (uint8_t)n};
  q->op = 0xff;
  begin_op(s, q, &o, m);
  while (model_step(s, p, m)) {
  }
}

unsigned model_report_now(struct state* s, int p, enum mutant m) {
  run_now(s, p, 'R', 0, m);
  s->p[p].report_done = 0;
  return s->p[p].value;
}

int model_reserve_now(struct state* s, int p, unsigned n, enum mutant m) {
  if (n == 0) return 1;
  run_now(s, p, 'A', n, m);
  return s->p[p].result_ok;
}

void model_dump(const struct state* s, FILE* out) {
  fprintf(out, "  hw=%u changes=%u kills_left=%u\n", s->hw, s->changes, s->kills_left);
  for (int i = 0; i < s->hw; i++) {
    fprintf(out, "  slot %d: used=%u owner=0x%02x dirty=%u\n", i, s->used[i], s->owner[i], s->dirty[i]);
  }
  for (int p = 0; p < g_cfg->procs; p++) {
    const struct proc* q = &s->p[p];
    fprintf(out,
            "  proc %d: alive=%u slot=%d op=%u pc=%u held=%u value=%u cache{key=%u valid=%u changes=%u others=%u}\n", p,
            q->alive, mine(q), q->op, q->pc, model_held(q), q->value, q->c.key, q->c.valid, q->c.changes, q->c.others);
  }
}
