/* Each process's own view of the queue (docs/design-queue-lanes.md part 2): no decision is taken from
 * what another slot's lane says alone, nor from the lease file's vclock, which every container can
 * write. Per slot, in this process's memory:
 *   - monotone lanes: the most a slot's lane's vtime ever said; moving back is ignored (and is a
 *     lie: reported in this process's own lane);
 *   - watched: where the slot joined this view (max(its lane, view clock) when first seen), raised
 *     to its lane whenever the lane is ahead, plus the time this process watched it hold the lease
 *     (while it waited), up to the holder's last activity published for it;
 * a slot's place is its lane, unless the lane lags what was watched by more than a fixed slack
 * (two lag bounds of its own time): then watched minus the slack. Every reader reads the same
 * lanes, so honest slots stand at the same place in every view; a lane kept behind is moved on by
 * what it was watched to hold. The view clock is raised to the place of each slot seen claiming and
 * to this process's own vtime. */
#include <time.h>

#include "gf_arbiter.h"

struct gf_view {
  uint64_t token[GPUFRAC_ARBITER_SLOTS];   /* the slot's token when last seen: a new one starts over */
  uint64_t lane_vt[GPUFRAC_ARBITER_SLOTS]; /* the most the lane said */
  uint64_t watched[GPUFRAC_ARBITER_SLOTS]; /* where it joined, or its lane when ahead, plus what was watched */
  uint8_t runnable[GPUFRAC_ARBITER_SLOTS];
  uint8_t vt_known[GPUFRAC_ARBITER_SLOTS]; /* lane_vt was read (a slot first seen holding was not) */
  uint8_t behind[GPUFRAC_ARBITER_SLOTS];   /* reads in a row that found it runnable and far behind */
  uint64_t clock;                          /* the view clock */
  uint64_t cur_word;                       /* a word HELD by another slot that this process watches, 0 none */
  uint64_t cur_since;
  uint64_t cur_active; /* its holder's last activity published for it and seen since, 0 none */
  struct gpufrac_arbiter_lane copies[GPUFRAC_ARBITER_SLOTS]; /* the last pread of each lane */
};

size_t gf_view_size(void) {
  return sizeof(struct gf_view);
}

struct gpufrac_arbiter_lane* gf_view_copy(struct gf_view* v, unsigned i) {
  return &v->copies[i];
}

static uint64_t later(uint64_t a, uint64_t b) {
  return gf_vt_before(a, b) ? b : a;
}

void gf_view_init(struct gf_view* v, uint64_t clock) {
  v->clock = clock;
}

/* (lease_ms + busy_ms) of slot i's own time, in virtual time. */
static uint64_t lag_bound(const struct gf_lease* l, unsigned i) {
  return ((uint64_t)l->p.lease_ms + l->p.busy_ms) * 1000000u * 1000u / gf_arbiter_weight(&l->slots->slots[i]);
}

/* How far a lane may lag what its slot was watched to hold: GF_SLACK_BOUNDS lag bounds of its own
 * time. An honest lane lags it by at most the word a watcher charged before its holder stored the
 * charge (lease + grace + busy), so an honest slot's place is its lane in every view; a lane that
 * stays behind gains this once, not at a rate. */
#define GF_SLACK_BOUNDS 2u
static uint64_t slack(const struct gf_lease* l, unsigned i) {
  return GF_SLACK_BOUNDS * lag_bound(l, i);
}

/* The lane, the same for every reader, is the place; what was watched only caps how far it lags. */
static uint64_t place(const struct gf_lease* l, unsigned i) {
  const struct gf_view* v = l->view;
  uint64_t capped = v->watched[i] - slack(l, i);
  return v->vt_known[i] && gf_vt_before(capped, v->lane_vt[i]) ? v->lane_vt[i] : capped;
}

/* Notes in this process's own lane that slot i's lane lied (GF_LIE_*): the slot's entry, or the oldest. */
void gf_view_suspect(const struct gf_lease* l, unsigned i, uint32_t what) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct gpufrac_arbiter_suspect* e = l->own->suspect;
  unsigned k = 0, n = sizeof l->own->suspect / sizeof *e;
  for (unsigned j = 0; j < n; j++) {
    if (__atomic_load_n(&e[j].slot, __ATOMIC_RELAXED) == i + 1) {
      k = j;
      break;
    }
    if (__atomic_load_n(&e[j].seen_at_s, __ATOMIC_RELAXED) < __atomic_load_n(&e[k].seen_at_s, __ATOMIC_RELAXED)) k = j;
  }
  __atomic_store_n(&e[k].slot, i + 1, __ATOMIC_RELAXED);
  __atomic_store_n(&e[k].what, what, __ATOMIC_RELAXED);
  __atomic_store_n(&e[k].seen_at_s, (uint64_t)ts.tv_sec, __ATOMIC_RELEASE);
}

/* A waiting slot's own heartbeat keeps its lane at most its lag bound behind its clock, and readers'
 * clocks differ by wake latency: a lane read GF_BEHIND_READS times in a row runnable and more than
 * GF_BEHIND_S seconds of its own time behind this reader's clock says less than its slot was charged
 * (a lane rewritten backwards between two reads is not seen moving back). */
#define GF_BEHIND_READS 3
#define GF_BEHIND_S 10u
static void far_behind(const struct gf_lease* l, unsigned i, uint64_t vt, int runnable) {
  struct gf_view* v = l->view;
  uint64_t far = (uint64_t)GF_BEHIND_S * 1000000000u * 1000u / gf_arbiter_weight(&l->slots->slots[i]);
  if (!runnable || !gf_vt_before(vt, v->clock - far)) {
    v->behind[i] = 0;
    return;
  }
  if (v->behind[i] < GF_BEHIND_READS) v->behind[i]++;
  if (v->behind[i] == GF_BEHIND_READS) gf_view_suspect(l, i, GF_LIE_BEHIND);
}

void gf_view_lane(const struct gf_lease* l, unsigned i, const struct gpufrac_arbiter_lane* n, int runnable) {
  struct gf_view* v = l->view;
  if (v == NULL || i == l->slot || i >= GPUFRAC_ARBITER_SLOTS) return;
  uint64_t token = __atomic_load_n(&l->slots->slots[i].token, __ATOMIC_SEQ_CST);
  uint64_t vt = n != NULL ? __atomic_load_n(&n->vtime, __ATOMIC_SEQ_CST) : v->lane_vt[i];
  if (v->token[i] != token) { /* first seen (or the slot went to another container): joins */
    v->token[i] = token;
    v->lane_vt[i] = vt;
    v->vt_known[i] = n != NULL;
    v->watched[i] = later(vt, v->clock);
    v->runnable[i] = (uint8_t)runnable;
    v->behind[i] = 0;
    return;
  }
  if (!v->vt_known[i] && n != NULL) {
    v->lane_vt[i] = vt;
    v->vt_known[i] = 1;
  }
  int64_t d = (int64_t)(vt - v->lane_vt[i]); /* against the most it has said */
  if (d > 0) v->lane_vt[i] = vt;
  if (d < 0) gf_view_suspect(l, i, GF_LIE_BACK);
  far_behind(l, i, n != NULL ? vt : v->clock, runnable);
  /* A lane ahead of what was watched (this process did not watch all of it): watching goes on from
   * there. No floor at this reader's clock: readers' clocks differ, lanes do not (the slot's own
   * heartbeat floors its lane at its own clock). */
  if (gf_vt_before(v->watched[i], v->lane_vt[i])) v->watched[i] = v->lane_vt[i];
  v->runnable[i] = (uint8_t)runnable;
}

uint64_t gf_view_place(const struct gf_lease* l, unsigned i) {
  if (i == l->slot || l->view == NULL) return l->my_vt;
  return place(l, i);
}

uint64_t gf_view_clock(const struct gf_lease* l) {
  return l->view != NULL ? l->view->clock : l->my_vt;
}

void gf_view_raise(const struct gf_lease* l, uint64_t vt) {
  if (l->view != NULL) l->view->clock = later(l->view->clock, vt);
}

/* When word w ends at the latest, as seen at now: its deadline (a holder renews or releases there, and
 * each renewal or extension is a new word), or now when that is sooner. A watcher that saw no activity
 * published for w (it looked once) charges up to there, not up to when it next looked: a watcher that
 * slept through a lease and the next (a loaded machine) would otherwise charge the holder both, its
 * clock would run ahead and, floored at that clock, its own place too. */
static uint64_t word_end(uint64_t w, uint64_t now) {
  int32_t left = (int32_t)(gpufrac_lease_deadline(w) - (uint32_t)(now / 1000000u));
  return left >= 0 ? now : now - (uint64_t)(-(int64_t)left) * 1000000u;
}

void gf_view_watch(const struct gf_lease* l, uint64_t w, uint64_t now, uint64_t active) {
  struct gf_view* v = l->view;
  if (v == NULL) return;
  if (w == v->cur_word && w != 0) { /* still held: its last activity as published for this word */
    if (active != 0 && gf_vt_before(v->cur_active, active)) v->cur_active = active;
    return;
  }
  if (v->cur_word != 0) { /* the watched word ended: its holder is charged the activity it was seen in */
    unsigned s = gpufrac_lease_holder(v->cur_word) - 1;
    uint64_t end = v->cur_active != 0 ? v->cur_active : word_end(v->cur_word, now);
    if (gf_vt_before(now, end)) end = now;
    uint64_t most = ((uint64_t)l->p.lease_ms + l->p.grace_ms + l->p.busy_ms) * 1000000u, dt = end - v->cur_since;
    if ((int64_t)dt < 0) dt = 0;
    if (dt > most) dt = most; /* no word is held longer: this process stopped watching meanwhile */
    v->watched[s] += dt * 1000u / gf_arbiter_weight(&l->slots->slots[s]);
  }
  v->cur_word = 0;
  uint32_t h = gpufrac_lease_holder(w);
  if (!gpufrac_lease_claimed(w) || h == 0 || h > gf_arbiter_slots_in_use(l->slots) || h == l->slot + 1) return;
  uint64_t token = __atomic_load_n(&l->slots->slots[h - 1].token, __ATOMIC_SEQ_CST);
  if (v->token[h - 1] != token) { /* first seen holding: joins at the clock, its lane read later */
    v->token[h - 1] = token;
    v->vt_known[h - 1] = 0;
    v->watched[h - 1] = v->clock;
  }
  v->cur_word = w;
  v->cur_since = now;
  v->cur_active = active != 0 && gf_vt_before(now, active) ? active : 0;
  gf_view_raise(l, place(l, h - 1));
}
