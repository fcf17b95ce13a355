/* The lease protocol of one process on one GPU (arbiter_abi.h, "Rules"): claim, renewal,
 * release to the next slot, takeover of an expired or idle holder, and the waiting between. Every
 * change is one CAS on the lease word; waiting is a futex wait on `changes` with a timeout, so
 * nothing waits on a process that may be dead. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gf_arbiter.h"

#define GF_MAX_CHARGE_NS 2000000000ull /* a charge read from the file is at most 2 s */

uint64_t gf_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t ms_of(uint64_t ns) {
  return (uint32_t)(ns / 1000000u);
}
static int32_t ms_diff(uint32_t a, uint32_t b) {
  return (int32_t)(a - b);
}

static void wake_all(struct gpufrac_arbiter* a) {
  __atomic_fetch_add(&a->changes, 1, __ATOMIC_SEQ_CST);
  syscall(SYS_futex, &a->changes, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void wait_changes(struct gpufrac_arbiter* a, uint32_t seen, uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  syscall(SYS_futex, &a->changes, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static int cas_lease(struct gpufrac_arbiter* a, uint64_t expected, uint64_t next) {
  return __atomic_compare_exchange_n(&a->lease, &expected, next, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static void raise_vclock(struct gpufrac_arbiter* a, uint64_t vt) {
  uint64_t cur = __atomic_load_n(&a->vclock, __ATOMIC_SEQ_CST);
  while (gf_vt_before(cur, vt) &&
         !__atomic_compare_exchange_n(&a->vclock, &cur, vt, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
}

int gf_lease_init(struct gf_lease* l, const struct gf_arb* m, uint64_t token, uint32_t pid, char* err, size_t err_len) {
  memset(l, 0, sizeof *l);
  int i = gf_arbiter_find_token(m->slots, token);
  if (i < 0) {
    snprintf(err, err_len, "no slot holds token %016llx; accepted: the slot the host set up for this container",
             (unsigned long long)token);
    return -1;
  }
  const struct gpufrac_arbiter_slot* s = &m->slots->slots[i];
  if (m->table == NULL && m->own == NULL) {
    snprintf(err, err_len, "no lane of its own mapped; accepted: the lane file the host made for this container");
    return -1;
  }
  void* view = mmap(NULL, gf_view_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (view == MAP_FAILED) {
    snprintf(err, err_len, "cannot map %zu bytes for its view of the queue: %s", gf_view_size(), strerror(errno));
    return -1;
  }
  l->view = view;
  l->own = m->table != NULL ? &m->table[i] : m->own;
  l->my_vt = __atomic_load_n(&l->own->vtime, __ATOMIC_SEQ_CST);
  gf_view_init(l->view, l->my_vt);
  l->lanes = m->lanes;
  l->table = m->table;
  l->arb = m->lease;
  l->slots = m->slots;
  gf_arbiter_params(m->slots, &l->p);
  l->slot = (unsigned)i;
  l->token = token;
  l->weight = gf_arbiter_weight(s);
  uint32_t flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
  l->strict = (flags & GPUFRAC_ARBITER_STRICT) != 0;
  l->high = (flags & GPUFRAC_ARBITER_HIGH) != 0;
  l->pid = pid;
  return 0;
}

/* The holder's fields for this epoch: written before info_epoch, which readers check around them. */
static void publish(struct gf_lease* l, uint64_t word, uint64_t start, uint64_t now) {
  struct gpufrac_arbiter* a = l->arb;
  __atomic_store_n(&a->info_epoch, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->start_ns, start, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->active_ns, now, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->my_active, now, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->busy, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->busy_until_ns, now, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->holder_pid, l->pid, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->info_epoch, gpufrac_lease_epoch(word) + 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->own->held_word, word, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->word, word, __ATOMIC_SEQ_CST);
  l->start_ns = start;
}

struct gf_info {
  int valid;
  uint64_t start, active, busy_until;
  uint32_t busy, pid;
};

/* The holder's fields if they describe lease word w. */
static struct gf_info read_info(const struct gpufrac_arbiter* a, uint64_t w) {
  struct gf_info i = {0, 0, 0, 0, 0, 0};
  uint32_t e = gpufrac_lease_epoch(w) + 1;
  if (__atomic_load_n(&a->info_epoch, __ATOMIC_SEQ_CST) != e) return i;
  i.start = __atomic_load_n(&a->start_ns, __ATOMIC_SEQ_CST);
  i.active = __atomic_load_n(&a->active_ns, __ATOMIC_SEQ_CST);
  i.busy = __atomic_load_n(&a->busy, __ATOMIC_SEQ_CST);
  i.busy_until = __atomic_load_n(&a->busy_until_ns, __ATOMIC_SEQ_CST);
  i.pid = __atomic_load_n(&a->holder_pid, __ATOMIC_SEQ_CST);
  i.valid = __atomic_load_n(&a->info_epoch, __ATOMIC_SEQ_CST) == e;
  return i;
}

/* A taker records in its own lane the lease it ended (start .. last activity, as the holder published
 * them): the holder's slot charges itself that, once, if its holder never did (killed). */
static void record_took(struct gf_lease* l, uint64_t w, struct gf_info info) {
  uint32_t h = gpufrac_lease_holder(w);
  if (!info.valid || h == 0 || h > GPUFRAC_ARBITER_SLOTS || h == l->slot + 1) return;
  uint64_t ns = (int64_t)(info.active - info.start) > 0 ? info.active - info.start : 0;
  struct gpufrac_arbiter_lane* own = l->own;
  __atomic_store_n(&own->took_slot, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&own->took_word, w, __ATOMIC_SEQ_CST);
  __atomic_store_n(&own->took_ns, ns > GF_MAX_CHARGE_NS ? GF_MAX_CHARGE_NS : ns, __ATOMIC_SEQ_CST);
  __atomic_store_n(&own->took_slot, h, __ATOMIC_SEQ_CST);
}

/* CAS w -> held by this process (a takeover when taken: its holder charges itself on finding its
 * word gone, lease_hold.c). */
static int try_claim(struct gf_lease* l, uint64_t w, uint64_t now, int taken) {
  struct gpufrac_arbiter* a = l->arb;
  struct gf_info info = taken ? read_info(a, w) : (struct gf_info){0, 0, 0, 0, 0, 0};
  uint64_t next = gpufrac_lease_word(l->slot + 1, 1, gpufrac_lease_epoch(w) + 1, ms_of(now) + l->p.lease_ms);
  if (!cas_lease(a, w, next)) return 0;
  __atomic_store_n(&l->own->claimed_ns, now, __ATOMIC_SEQ_CST);
  gf_view_watch(l, next, now, 0); /* the holding it watched ends here */
  gf_view_raise(l, l->my_vt);
  __atomic_store_n(&l->solo, !l->strict && gf_lease_alone(l, now), __ATOMIC_RELAXED);
  l->waiting_ns = 0;
  publish(l, next, now, now);
  if (taken) {
    record_took(l, w, info);
    wake_all(a);
  }
  raise_vclock(a, l->my_vt); /* informational: no shim decides from the file's vclock */
  uint32_t mine = l->slot + 1;
  __atomic_compare_exchange_n(&a->preempt, &mine, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  l->skip = 0;
  return 1;
}

/* The holder's published pid names no process (ESRCH): it was killed. Only ever a shortcut: in another
 * PID namespace (no host PID namespace) a pid may name nothing or anything, and a forger may write
 * any; a dead-looking holder only loses what busy would have given it. */
static int holder_gone(uint32_t pid) {
  return pid != 0 && pid <= (uint32_t)INT_MAX && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The holder of w has been idle (not waiting for its own GPU work, nor launching) longer than idle_us,
 * and the work it had in flight is done by its own account (busy_until_ns, at most busy_ms ahead). */
static int holder_idle(const struct gf_lease* l, uint64_t w, uint64_t now) {
  struct gf_info i = read_info(l->arb, w);
  if (!i.valid || i.busy == gpufrac_lease_epoch(w) + 1 || (int64_t)(now - i.active) <= (int64_t)l->p.idle_us * 1000)
    return 0;
  uint64_t cap = i.active + (uint64_t)l->p.busy_ms * 1000000u;
  uint64_t until = (int64_t)(i.busy_until - cap) < 0 ? i.busy_until : cap;
  return (int64_t)(now - until) > 0 || holder_gone(i.pid);
}

/* The holder of w is past deadline + grace and, while it waits for its own work (and is alive), also
 * past the end it announced (at most busy_ms after its last activity) + grace. */
static int holder_overdue(const struct gf_lease* l, uint64_t w, uint64_t now, int32_t past_ms) {
  if (past_ms <= (int32_t)l->p.grace_ms) return 0;
  struct gf_info i = read_info(l->arb, w);
  if (!i.valid || i.busy != gpufrac_lease_epoch(w) + 1 || holder_gone(i.pid)) return 1;
  uint64_t cap = i.active + (uint64_t)l->p.busy_ms * 1000000u;
  uint64_t until = (int64_t)(i.busy_until - cap) < 0 ? i.busy_until : cap;
  return (int64_t)(now - until) > (int64_t)l->p.grace_ms * 1000000;
}

/* A takeover ends the lease as its holder would have: to the slot the queue says is next. When
 * that is another slot, CAS to a designation of it and wait. */
static int designate_next(struct gf_lease* l, uint64_t w, uint64_t now) {
  int pick = gf_lease_pick(l, now);
  if (pick < 0 || pick == (int)l->slot) return 0;
  struct gpufrac_arbiter* a = l->arb;
  struct gf_info info = read_info(a, w);
  uint64_t next = gpufrac_lease_word((uint32_t)pick + 1, 0, gpufrac_lease_epoch(w) + 1, ms_of(now) + l->p.claim_ms);
  if (!cas_lease(a, w, next)) return -1;
  record_took(l, w, info);
  wake_all(a);
  return 1;
}

/* 1: claimed; 0: not this process's to take now; -1: the word moved under the CAS. */
static int try_take(struct gf_lease* l, uint64_t w, uint64_t now) {
  uint32_t holder = gpufrac_lease_holder(w);
  int32_t past = ms_diff(ms_of(now), gpufrac_lease_deadline(w));
  int implausible = -past > (int32_t)(l->p.lease_ms + l->p.claim_ms + 1000);
  int taken = 0;
  if (holder != 0 && holder <= GPUFRAC_ARBITER_SLOTS && !gpufrac_lease_claimed(w)) {
    int mine = holder == l->slot + 1 && w != l->skip;
    if (!mine && past <= 0 && !implausible) return 0; /* past its deadline: first come (its slot did not) */
  } else if (holder != 0 && holder <= GPUFRAC_ARBITER_SLOTS) {
    if (!implausible && !holder_idle(l, w, now) && !holder_overdue(l, w, now, past)) return 0;
    int d = designate_next(l, w, now);
    if (d != 0) return d > 0 ? 0 : -1;
    taken = 1;
  }
  return try_claim(l, w, now, taken) ? 1 : -1;
}

/* How long to wait before looking again: a heartbeat at most, less when the holder's lease
 * expires or it turns idle sooner. */
static uint64_t wait_ns(const struct gf_lease* l, uint64_t w, uint64_t now) {
  uint64_t t = (uint64_t)l->p.heartbeat_us * 1000;
  int32_t left = ms_diff(gpufrac_lease_deadline(w), ms_of(now));
  if (gpufrac_lease_claimed(w)) left += (int32_t)l->p.grace_ms;
  if (left >= 0 && (uint64_t)left * 1000000 + 1000000 < t) t = (uint64_t)left * 1000000 + 1000000;
  struct gf_info i = read_info(l->arb, w);
  if (i.valid && gpufrac_lease_claimed(w)) {
    int64_t idle_left = (int64_t)(i.active + (uint64_t)l->p.idle_us * 1000 - now);
    if (idle_left >= 0 && (uint64_t)idle_left + 50000 < t) t = (uint64_t)idle_left + 50000;
  }
  return t < 50000 ? 50000 : t;
}

/* Says this process waits (slot runnable). A slot coming back from idle joins at vclock; one that
 * stayed runnable is never more than one lease and its overrun (lease_ms + busy_ms) of its own
 * behind it (in the queue's order it cannot be: a lag beyond that comes from leases taken over out
 * of turn, and is not owed). */
static void heartbeat(struct gf_lease* l, uint64_t now) {
  if (l->seen_ns != 0 && now - l->seen_ns < (uint64_t)l->p.heartbeat_us * 500) return;
  struct gpufrac_arbiter_lane* s = l->own;
  uint64_t prev = __atomic_exchange_n(&s->seen_ns, now, __ATOMIC_SEQ_CST);
  l->seen_ns = now;
  int runnable = prev != 0 && (int64_t)(now - prev) < (int64_t)l->p.runnable_us * 1000;
  uint64_t floor = gf_view_clock(l); /* this process's view clock: the file's vclock can be pushed */
  if (runnable) floor -= ((uint64_t)l->p.lease_ms + l->p.busy_ms) * 1000000u * 1000u / l->weight;
  if (gf_vt_before(l->my_vt, floor)) l->my_vt = floor;
  uint64_t vt = __atomic_load_n(&s->vtime, __ATOMIC_SEQ_CST);
  while (gf_vt_before(vt, l->my_vt) &&
         !__atomic_compare_exchange_n(&s->vtime, &vt, l->my_vt, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
}

/* A high-priority waiter within its credit asks a normal-priority holder to end its lease. */
static void request_preempt(struct gf_lease* l, uint64_t w, uint64_t now) {
  struct gpufrac_arbiter* a = l->arb;
  uint32_t h = gpufrac_lease_holder(w), mine = l->slot + 1;
  if (!gpufrac_lease_claimed(w) || h == 0 || h > GPUFRAC_ARBITER_SLOTS || h == mine) return;
  if (__atomic_load_n(&l->slots->slots[h - 1].flags, __ATOMIC_RELAXED) & GPUFRAC_ARBITER_HIGH) return;
  if (!gf_lease_high_eligible(l, l->slot)) return;
  uint32_t p = __atomic_load_n(&a->preempt, __ATOMIC_SEQ_CST);
  if (p == mine ||
      (p != 0 && p <= GPUFRAC_ARBITER_SLOTS && gf_lease_high_eligible(l, p - 1) && gf_lease_runnable(l, p - 1, now)))
    return;
  __atomic_compare_exchange_n(&a->preempt, &p, mine, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

uint64_t gf_lease_bound_ns(const struct gf_lease* l) {
  uint64_t base = (4 * ((uint64_t)l->p.lease_ms + l->p.grace_ms) + l->p.busy_ms + l->p.credit_ms) * 1000000u;
  uint64_t c = l->last_ns < GF_MAX_CHARGE_NS ? l->last_ns : GF_MAX_CHARGE_NS;
  uint64_t w = l->weight < 10000 ? 10000 : l->weight;
  return base + c * (1000000u - w) / w;
}

/* Strict pacing as this process's own charges set it (a lane's not_before can be forged): the
 * waiting bound does not run meanwhile. */
static int paced_locally(const struct gf_lease* l, uint64_t now) {
  return l->strict && (int64_t)(l->local_nb - now) > 0;
}

/* One look at the lease: 1 claimed, 0 wait (the word's change count in *seen, w in *word), -1
 * looked again at once (the word moved). */
static int attempt(struct gf_lease* l, uint64_t now, uint32_t* seen, uint64_t* word) {
  heartbeat(l, now);
  *seen = __atomic_load_n(&l->arb->changes, __ATOMIC_SEQ_CST);
  *word = __atomic_load_n(&l->arb->lease, __ATOMIC_SEQ_CST);
  struct gf_info info = read_info(l->arb, *word);
  gf_view_watch(l, *word, now, info.valid ? info.active : 0);
  if (l->high) request_preempt(l, *word, now);
  return try_take(l, *word, now);
}

/* A process that has not joined the arbiter (its lease file's mode kept it out) tries again, at most
 * every lease: 1 when it is joined. */
static int joined(struct gf_lease* l, uint64_t now) {
  if (__atomic_load_n(&l->arb, __ATOMIC_ACQUIRE) != NULL) return 1;
  if (l->join == NULL || (l->join_ns != 0 && now - l->join_ns < (uint64_t)l->p.lease_ms * 1000000u)) return 0;
  l->join_ns = now;
  return l->join(l) == 0 && __atomic_load_n(&l->arb, __ATOMIC_ACQUIRE) != NULL;
}

int gf_lease_try(struct gf_lease* l) {
  if (!gf_lease_slot_ok(l)) return -1;
  uint64_t now = gf_now_ns();
  if (!joined(l, now)) return 0;
  uint64_t nb = l->strict ? __atomic_load_n(&l->own->not_before_ns, __ATOMIC_SEQ_CST) : 0;
  if (l->strict && (int64_t)(nb - now) > 0 && paced_locally(l, now)) return 0;
  uint32_t seen;
  uint64_t w;
  return attempt(l, now, &seen, &w) == 1;
}

int gf_lease_acquire(struct gf_lease* l) {
  for (;;) {
    if (!gf_lease_slot_ok(l)) return -1;
    uint64_t now = gf_now_ns();
    if (paced_locally(l, now) || l->waiting_ns == 0) l->waiting_ns = now;
    if (now - l->waiting_ns > gf_lease_bound_ns(l)) return 1;
    if (!joined(l, now)) { /* kept out of the lease file: wait as for a lease that does not come */
      struct timespec ts = {0, (long)l->p.heartbeat_us * 1000};
      nanosleep(&ts, NULL);
      continue;
    }
    struct gpufrac_arbiter* a = l->arb;
    uint64_t nb = l->strict ? __atomic_load_n(&l->own->not_before_ns, __ATOMIC_SEQ_CST) : 0;
    if (l->strict && (int64_t)(nb - now) > 0) { /* paced: not runnable until then */
      uint64_t d = nb - now;
      wait_changes(a, __atomic_load_n(&a->changes, __ATOMIC_SEQ_CST), d < 20000000 ? d : 20000000);
      continue;
    }
    uint32_t seen;
    uint64_t w;
    int r = attempt(l, now, &seen, &w);
    if (r == 1) return 0;
    if (r == 0) wait_changes(a, seen, wait_ns(l, w, now));
  }
}
