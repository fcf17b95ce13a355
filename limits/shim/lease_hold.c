/* The holder's side of the lease (arbiter_abi.h, "End of a lease"): where its lease stands, the
 * renewal that keeps a container alone on the GPU, the drain and release to the next slot, and
 * what keeps a draining or waiting holder from looking dead or idle. */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gf_arbiter.h"

static uint32_t ms_of(uint64_t ns) {
  return (uint32_t)(ns / 1000000u);
}

static int cas_lease(struct gpufrac_arbiter* a, uint64_t expected, uint64_t next) {
  return __atomic_compare_exchange_n(&a->lease, &expected, next, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static void wake_all(struct gpufrac_arbiter* a) {
  __atomic_fetch_add(&a->changes, 1, __ATOMIC_SEQ_CST);
  syscall(SYS_futex, &a->changes, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* This holder's new word, published (start_ns is kept when only the deadline moves). */
static void republish(struct gf_lease* l, uint64_t next, uint64_t start, uint64_t now) {
  struct gpufrac_arbiter* a = l->arb;
  __atomic_store_n(&a->info_epoch, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->start_ns, start, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->active_ns, now, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->my_active, now, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->info_epoch, gpufrac_lease_epoch(next) + 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->own->held_word, next, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->word, next, __ATOMIC_SEQ_CST);
  l->start_ns = start;
}

/* This slot charged itself the lease of word w (a taker's record of it is not applied then). */
static void charged(struct gf_lease* l, uint64_t w) {
  __atomic_store_n(&l->own->charged_word, w, __ATOMIC_SEQ_CST);
}

/* A charge of this process's own lease: the lane's, the waiting bound's debt term, and strict pacing
 * kept locally too (the lane's not_before can be forged). */
static void charge_self(struct gf_lease* l, uint64_t ns, uint64_t end_ns) {
  gf_arbiter_charge(l->own, ns, end_ns, l->weight, l->strict);
  /* Its own place from its own charges (a lane rewritten backwards fools nobody), or the lane's when
   * another process of the container charged it further. */
  uint64_t lane = __atomic_load_n(&l->own->vtime, __ATOMIC_SEQ_CST), mine = l->my_vt + ns * 1000u / l->weight;
  l->my_vt = gf_vt_before(mine, lane) ? lane : mine;
  /* A lease taken over while its holder drained is charged in parts (found gone, then the work
   * waited for): the bound's term is the whole lease, as one charge of it was when the taker wrote it. */
  l->last_ns = l->last_start == l->start_ns ? l->last_ns + ns : ns;
  l->last_start = l->start_ns;
  if (!l->strict || l->weight >= 1000000) return;
  uint64_t from = end_ns - 2 * ns;
  uint64_t base = (int64_t)(l->local_nb - from) > 0 ? l->local_nb : from;
  l->local_nb = base + ns * 1000000u / l->weight;
}

/* Another process changed the lease word: this process no longer holds it. A taker cannot write
 * this slot's lane, so the holder charges the lease itself: its start .. the last activity it
 * published for it (kept in its memory: the lease file's by now may be the taker's), at most now.
 * Debt is charged for work waited for past that. */
static void lost(struct gf_lease* l, uint64_t now) {
  __atomic_store_n(&l->lost_ns, now, __ATOMIC_SEQ_CST);
  uint64_t w = __atomic_exchange_n(&l->word, 0, __ATOMIC_SEQ_CST);
  if (w == 0) return;
  uint64_t c = __atomic_load_n(&l->own->charged_word, __ATOMIC_SEQ_CST);
  if (c == w || !__atomic_compare_exchange_n(&l->own->charged_word, &c, w, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return; /* another process of the container charged it from the taker's record */
  uint64_t end = __atomic_load_n(&l->my_active, __ATOMIC_SEQ_CST);
  if ((int64_t)(end - l->start_ns) < 0) end = l->start_ns;
  if ((int64_t)(end - now) > 0) end = now;
  uint64_t ns = end - l->start_ns;
  charge_self(l, ns > 2000000000ull ? 2000000000ull : ns, end);
  l->charged_to = end;
}

enum gf_lease_state gf_lease_state(struct gf_lease* l, uint64_t now_ns) {
  uint64_t w = __atomic_load_n(&l->word, __ATOMIC_SEQ_CST);
  if (w == 0) return GF_LEASE_LOST;
  if (__atomic_load_n(&l->arb->lease, __ATOMIC_SEQ_CST) != w) {
    lost(l, now_ns);
    return GF_LEASE_LOST;
  }
  if ((int32_t)(gpufrac_lease_deadline(w) - ms_of(now_ns)) <= 0) return GF_LEASE_END;
  return gf_lease_preempted(l, now_ns) ? GF_LEASE_END : GF_LEASE_HOLD;
}

/* CAS to itself with a new deadline; the time so far is charged and the next lease starts now. */
static int renew(struct gf_lease* l, uint64_t now) {
  struct gpufrac_arbiter* a = l->arb;
  uint64_t w = l->word;
  uint64_t next = gpufrac_lease_word(l->slot + 1, 1, gpufrac_lease_epoch(w) + 1, ms_of(now) + l->p.lease_ms);
  if (!cas_lease(a, w, next)) {
    lost(l, now);
    return 0;
  }
  charged(l, w);
  charge_self(l, now - l->start_ns, now);
  republish(l, next, now, now);
  __atomic_store_n(&l->solo, gf_lease_alone(l, now), __ATOMIC_RELAXED);
  uint64_t vt = l->my_vt;
  gf_view_raise(l, vt);
  uint64_t cur = __atomic_load_n(&a->vclock, __ATOMIC_SEQ_CST);
  while (gf_vt_before(cur, vt) &&
         !__atomic_compare_exchange_n(&a->vclock, &cur, vt, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return 1;
}

/* A process starts from its container's lane (it has nothing else), which the container can rewrite
 * backwards: at its first lease end with another slot runnable, it joins the queue there, its own
 * place raised to that slot's (the lowest runnable place of its view). Without this a process started
 * from a lane a minute behind kept renewing for a minute; with a lag bound's allowance it still kept
 * the GPU long enough at its start for its neighbour to wait past its bound. Once only: from then on
 * its own charges place it (flooring it at every lease end moved honest holders of 200 ms kernels off
 * their share, e2e.compute_kernels). */
static void floor_own(struct gf_lease* l, unsigned pick) {
  if (l->placed) return;
  l->placed = 1;
  uint64_t floor = gf_view_place(l, pick);
  if (gf_vt_before(l->my_vt, floor)) l->my_vt = floor;
}

/* A fair holder keeps the GPU while no runnable slot is behind it in virtual time (its own vtime
 * counted with the time it has held the lease so far). */
static int keeps(struct gf_lease* l, int pick, uint64_t now) {
  if (l->strict || gf_lease_preempted(l, now) || !gf_lease_slot_ok(l)) return 0; /* a freed slot: give it up */
  if (pick < 0) return 1;
  if (pick == (int)l->slot) return 0; /* another of its processes waits: its turn */
  int high = gf_lease_high_eligible(l, (unsigned)pick);
  if (!l->high && high) return 0;
  if (!high) floor_own(l, (unsigned)pick); /* the lowest runnable place: no high-priority one is eligible */
  uint64_t mine = l->my_vt + (now - l->start_ns) * 1000u / l->weight;
  return !gf_vt_before(gf_view_place(l, (unsigned)pick), mine); /* pick read its lane just now */
}

int gf_lease_end(struct gf_lease* l, void (*drain)(void*), void* arg) {
  uint64_t now = gf_now_ns();
  if (keeps(l, gf_lease_pick(l, now), now)) return renew(l, now);
  drain(arg); /* the overrun is part of the lease */
  now = gf_now_ns();
  int pick = gf_lease_pick(l, now);
  uint64_t w = __atomic_load_n(&l->word, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->word, 0, __ATOMIC_SEQ_CST);
  if (w == 0) return 0; /* lost while draining: charged when it was found gone */
  uint32_t e = gpufrac_lease_epoch(w) + 1;
  uint64_t next = pick >= 0 ? gpufrac_lease_word((uint32_t)pick + 1, 0, e, ms_of(now) + l->p.claim_ms)
                            : gpufrac_lease_word(0, 0, e, ms_of(now));
  if (!cas_lease(l->arb, w, next)) {
    __atomic_store_n(&l->word, w, __ATOMIC_SEQ_CST); /* taken meanwhile: charged as a lost word */
    lost(l, now);
    return 0;
  }
  charged(l, w);
  charge_self(l, now - l->start_ns, now);
  l->skip = pick == (int)l->slot ? next : 0;
  wake_all(l->arb);
  return 0;
}

void gf_lease_extend(struct gf_lease* l, uint64_t now_ns) {
  uint64_t w = __atomic_load_n(&l->word, __ATOMIC_SEQ_CST);
  if (w == 0 || (int32_t)(gpufrac_lease_deadline(w) - ms_of(now_ns)) > (int32_t)(l->p.lease_ms / 2)) return;
  uint64_t next = gpufrac_lease_word(l->slot + 1, 1, gpufrac_lease_epoch(w) + 1, ms_of(now_ns) + l->p.lease_ms);
  if (!cas_lease(l->arb, w, next)) {
    lost(l, now_ns);
    return;
  }
  republish(l, next, l->start_ns, now_ns);
}

uint64_t gf_lease_busy(struct gf_lease* l, int busy, uint64_t expect_ns) {
  uint64_t w = __atomic_load_n(&l->word, __ATOMIC_SEQ_CST);
  if (w == 0 || __atomic_load_n(&l->arb->lease, __ATOMIC_SEQ_CST) != w) return 0;
  uint64_t now = gf_now_ns();
  __atomic_store_n(&l->arb->active_ns, now, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->my_active, now, __ATOMIC_SEQ_CST);
  if (busy) __atomic_store_n(&l->arb->busy_until_ns, now + expect_ns, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->arb->busy, busy ? gpufrac_lease_epoch(w) + 1 : 0, __ATOMIC_SEQ_CST);
  return w;
}

void gf_lease_debt(struct gf_lease* l, uint64_t from_ns) {
  uint64_t w, held;
  do { /* a word this process is changing (another thread extends or renews it) is still its own */
    w = __atomic_load_n(&l->word, __ATOMIC_SEQ_CST);
    held = __atomic_load_n(&l->arb->lease, __ATOMIC_SEQ_CST);
  } while (w != __atomic_load_n(&l->word, __ATOMIC_SEQ_CST));
  int taken = w != 0 ? held != w : (int64_t)(__atomic_load_n(&l->lost_ns, __ATOMIC_SEQ_CST) - from_ns) >= 0;
  if (taken && w != 0) lost(l, gf_now_ns()); /* charges the lease up to its last activity */
  if ((int64_t)(l->charged_to - from_ns) > 0) from_ns = l->charged_to;
  uint64_t now = gf_now_ns(), ns = now - from_ns;
  if (!taken || (int64_t)ns <= 0) return;
  charge_self(l, ns > 2000000000ull ? 2000000000ull : ns, now);
}

void gf_lease_drop(struct gf_lease* l) {
  uint64_t w = __atomic_exchange_n(&l->word, 0, __ATOMIC_SEQ_CST), now = gf_now_ns();
  if (w == 0 || !cas_lease(l->arb, w, gpufrac_lease_word(0, 0, gpufrac_lease_epoch(w) + 1, ms_of(now)))) return;
  charged(l, w);
  charge_self(l, now - l->start_ns, now);
  wake_all(l->arb);
}
