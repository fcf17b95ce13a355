/* Who gets the GPU next (arbiter_abi.h, "End of a lease", "Runnable", "Preemption"): start-time
 * fair queuing over the runnable slots, high priority first while within its credit, each slot at
 * its place in this process's view (lease_view.c), never at what its lane says alone. Reads only;
 * every value from a file is checked or clamped before use. Another container's lane is never
 * mapped (its owner can resize it): it is read with pread, 256 bytes, into this process's copy. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gf_arbiter.h"

/* The slot's key as a file name in the lanes directory: NUL-terminated, no '/', not "." or "..". */
static int lane_name(const struct gpufrac_arbiter_slot* s, char* out) {
  memcpy(out, (const void*)s->key, GPUFRAC_ARBITER_KEY);
  out[GPUFRAC_ARBITER_KEY - 1] = '\0';
  return out[0] != '\0' && strchr(out, '/') == NULL && strcmp(out, ".") != 0 && strcmp(out, "..") != 0;
}

/* pread of the whole lane into dst: 0, or -1 (missing, cut short, unreadable). */
static int read_lane(const char* dir, const char* name, struct gpufrac_arbiter_lane* dst) {
  char path[GF_LANES_PATH + GPUFRAC_ARBITER_KEY + 2];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  ssize_t got;
  do {
    got = pread(fd, dst, sizeof *dst, 0);
  } while (got < 0 && errno == EINTR);
  close(fd);
  return got == (ssize_t)sizeof *dst ? 0 : -1;
}

static int lane_runnable(const struct gf_lease* l, unsigned i, const struct gpufrac_arbiter_lane* n, uint64_t now_ns);

static uint64_t mono_ns(void) { /* gf_now_ns, which lives in a layer above */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The lane as read now, before the view takes it in. */
static const struct gpufrac_arbiter_lane* raw_lane(const struct gf_lease* l, unsigned i) {
  if (l->table != NULL) return &l->table[i];
  if (i == l->slot) return l->own;
  const struct gpufrac_arbiter_slot* s = &l->slots->slots[i];
  if (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_ACTIVE || l->view == NULL) return NULL;
  char name[GPUFRAC_ARBITER_KEY];
  struct gpufrac_arbiter_lane* copy = gf_view_copy(l->view, i);
  if (!lane_name(s, name)) return NULL;
  if (read_lane(l->lanes, name, copy) == 0) return copy;
  gf_view_suspect(l, i, GF_LIE_UNREAD);
  return NULL;
}

/* Another slot's process took over a lease of this slot that this slot never charged (its holder
 * was killed): charged now, once (charged_word, CAS: one process of the container does it). */
static void apply_took(const struct gf_lease* l, const struct gpufrac_arbiter_lane* n, uint64_t now) {
  struct gpufrac_arbiter_lane* own = l->own;
  uint64_t w = __atomic_load_n(&n->took_word, __ATOMIC_SEQ_CST), ns = __atomic_load_n(&n->took_ns, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&n->took_slot, __ATOMIC_SEQ_CST) != l->slot + 1 || w == 0 ||
      w != __atomic_load_n(&own->held_word, __ATOMIC_SEQ_CST) || w == __atomic_load_n(&l->word, __ATOMIC_SEQ_CST))
    return; /* not this slot's last lease, or this process holds it still (it charges it when it finds it gone) */
  uint64_t c = __atomic_load_n(&own->charged_word, __ATOMIC_SEQ_CST);
  if (c == w || !__atomic_compare_exchange_n(&own->charged_word, &c, w, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return;
  uint64_t most = ((uint64_t)l->p.lease_ms + l->p.grace_ms + l->p.busy_ms) * 1000000u;
  if (ns > most) ns = most;
  gf_arbiter_charge(own, ns, now, l->weight, l->strict);
  struct gf_lease* self = (struct gf_lease*)l; /* its own place moves with its own charges */
  uint64_t lane = __atomic_load_n(&own->vtime, __ATOMIC_SEQ_CST), mine = self->my_vt + ns * 1000u / l->weight;
  self->my_vt = gf_vt_before(mine, lane) ? lane : mine;
}

const struct gpufrac_arbiter_lane* gf_lease_lane(const struct gf_lease* l, unsigned i) {
  if (i >= gf_arbiter_slots_in_use(l->slots)) return NULL;
  const struct gpufrac_arbiter_lane* n = raw_lane(l, i);
  if (n != NULL && i != l->slot) apply_took(l, n, mono_ns());
  if (i != l->slot) gf_view_lane(l, i, n, lane_runnable(l, i, n, mono_ns()));
  return n;
}

static int lane_runnable(const struct gf_lease* l, unsigned i, const struct gpufrac_arbiter_lane* n, uint64_t now_ns) {
  const struct gpufrac_arbiter_slot* s = &l->slots->slots[i];
  if (n == NULL || __atomic_load_n(&s->state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_ACTIVE) return 0;
  uint64_t seen = __atomic_load_n(&n->seen_ns, __ATOMIC_SEQ_CST);
  if (seen == 0 || (int64_t)(now_ns - seen) >= (int64_t)l->p.runnable_us * 1000) return 0;
  /* Served since it last waited (the lease went to it): nobody of it waits now. */
  if ((int64_t)(seen - __atomic_load_n(&n->claimed_ns, __ATOMIC_SEQ_CST)) <= 0) return 0;
  if (!(__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & GPUFRAC_ARBITER_STRICT)) return 1;
  return (int64_t)(now_ns - __atomic_load_n(&n->not_before_ns, __ATOMIC_SEQ_CST)) >= 0;
}

static int lane_high_eligible(const struct gf_lease* l, unsigned i, const struct gpufrac_arbiter_lane* n) {
  const struct gpufrac_arbiter_slot* s = &l->slots->slots[i];
  if (n == NULL || !(__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & GPUFRAC_ARBITER_HIGH)) return 0;
  uint64_t credit = (uint64_t)l->p.credit_ms * 1000000000u / gf_arbiter_weight(s);
  uint64_t ahead = gf_view_place(l, i) - gf_view_clock(l); /* the view's, not the lease file's vclock */
  return (int64_t)ahead <= (int64_t)credit;
}

int gf_lease_runnable(const struct gf_lease* l, unsigned i, uint64_t now_ns) {
  if (i >= gf_arbiter_slots_in_use(l->slots)) return 0;
  return lane_runnable(l, i, gf_lease_lane(l, i), now_ns);
}

int gf_lease_high_eligible(const struct gf_lease* l, unsigned i) {
  if (i >= gf_arbiter_slots_in_use(l->slots)) return 0;
  return lane_high_eligible(l, i, gf_lease_lane(l, i));
}

int gf_lease_pick(const struct gf_lease* l, uint64_t now_ns) {
  unsigned hw = gf_arbiter_slots_in_use(l->slots);
  int best = -1, best_high = 0;
  uint64_t best_vt = 0;
  for (unsigned i = 0; i < hw; i++) {
    const struct gpufrac_arbiter_lane* n = gf_lease_lane(l, i);
    if (!lane_runnable(l, i, n, now_ns)) continue;
    int high = lane_high_eligible(l, i, n);
    uint64_t vt = gf_view_place(l, i);
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
  if (p <= GPUFRAC_ARBITER_SLOTS && p <= gf_arbiter_slots_in_use(l->slots)) {
    const struct gpufrac_arbiter_lane* n = gf_lease_lane(l, p - 1);
    if (lane_high_eligible(l, p - 1, n) && lane_runnable(l, p - 1, n, now_ns)) return 1;
  }
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
