/* The compute arbiter of a GPU (gpufrac/arbiter_abi.h): its two files (the host's slots file, read
 * only in containers, and the lease file the shims write), slots, charges and history, and the
 * lease protocol. Shared by the shim, the host library and the stress test. */
#ifndef GPUFRAC_SHIM_GF_ARBITER_H
#define GPUFRAC_SHIM_GF_ARBITER_H

#include <stddef.h>
#include <stdint.h>

#include "gpufrac/arbiter_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GF_LANES_PATH 512

/* One GPU's arbiter as a process maps it: the lease file read-write, the slots file read-only (the
 * host maps it read-write; a shim never writes through it), its own lane read-write, and the lanes
 * directory whose other lanes it reads with pread. */
struct gf_arb {
  struct gpufrac_arbiter* lease;
  struct gpufrac_arbiter_slots* slots;
  struct gpufrac_arbiter_lane* own; /* this container's lane file, mapped read-write */
  char lanes[GF_LANES_PATH];        /* the lanes directory ("" none) */
  /* Tests and the stress model only: every slot's lane in one shared array (own and lanes unused). */
  struct gpufrac_arbiter_lane* table;
};

/* ---- arbiter.c: the files ---- */
/* The defaults the host writes (arbiter_abi.h). */
void gf_arbiter_default_params(struct gpufrac_arbiter_params* p);
/* Fill zeroed mappings: the slots file's header, params and GPU uuid; the lease file's header (the
 * host, before anyone else maps them). */
void gf_arbiter_slots_format(struct gpufrac_arbiter_slots* s, const char* gpu_uuid,
                             const struct gpufrac_arbiter_params* p);
void gf_arbiter_format(struct gpufrac_arbiter* a);
/* Check magic, version, size and slot count. 0, or -1 with the reason in err. */
int gf_arbiter_check(const struct gpufrac_arbiter* a, char* err, size_t err_len);
int gf_arbiter_slots_check(const struct gpufrac_arbiter_slots* s, char* err, size_t err_len);
/* Maps lease_path read-write and slots_path read-only (never following a symlink), each checked
 * for its size and header. 0, or -1 with the reason (naming the file) in err. */
int gf_arbiter_map(const char* lease_path, const char* slots_path, struct gf_arb* out, char* err, size_t err_len);
void gf_arbiter_unmap(struct gf_arb* m);
/* Each file on its own: the slots file read-only, the lease file read-write (out->lease set only on
 * success). 0, or -1 with the reason in err and errno from the open where that failed (EACCES: the
 * lease file's mode keeps this process out). */
int gf_arbiter_map_slots(const char* slots_path, struct gf_arb* out, char* err, size_t err_len);
int gf_arbiter_map_lease(const char* lease_path, struct gf_arb* out, char* err, size_t err_len);
/* This container's lane (lane_path, read-write, its first 256 bytes mapped) and the lanes directory
 * the others' are read from. 0, or -1 with the reason in err. */
int gf_arbiter_map_lane(const char* lane_path, const char* lanes_dir, struct gf_arb* out, char* err, size_t err_len);
/* The slots file's params, each clamped to its range (arbiter_abi.h). */
void gf_arbiter_params(const struct gpufrac_arbiter_slots* s, struct gpufrac_arbiter_params* out);
/* Slots that may be in use: [0, min(slot_high_water, GPUFRAC_ARBITER_SLOTS)). */
unsigned gf_arbiter_slots_in_use(const struct gpufrac_arbiter_slots* s);
/* A slot's weight clamped to 1..1000000. */
uint32_t gf_arbiter_weight(const struct gpufrac_arbiter_slot* s);
/* a < b as virtual times (wrapping). */
static inline int gf_vt_before(uint64_t a, uint64_t b) {
  return (int64_t)(a - b) < 0;
}

/* ---- arbiter_slots.c: the host's slot setup and release, lookup ---- */
/* Sets up a slot for key with token (the slot already holding key is updated in place and keeps
 * its token: read it back), resetting its lane in m->table when there is one (the host makes lane
 * files instead). Index, or -1 when every slot is taken. */
int gf_arbiter_setup(struct gf_arb* m, const char* key, uint64_t token, uint32_t weight_ppm, uint32_t flags,
                     uint64_t created_s);
/* Frees every ACTIVE or SETUP slot whose key is key. Returns how many. */
unsigned gf_arbiter_release_key(struct gf_arb* m, const char* key);
/* Frees slot i (ACTIVE or SETUP). 1 when it did. */
int gf_arbiter_release(struct gf_arb* m, unsigned i);
/* The ACTIVE slot whose token is token, or -1. */
int gf_arbiter_find_token(const struct gpufrac_arbiter_slots* s, uint64_t token);

/* ---- arbiter.c: charges and history ---- */
/* Charges ns of GPU time ending at end_ns to a lane of weight w ppm (strict: its not_before too). */
void gf_arbiter_charge(struct gpufrac_arbiter_lane* lane, uint64_t ns, uint64_t end_ns, uint32_t w, int strict);
/* GPU time charged to a lane in the GPUFRAC_ARBITER_WINDOW_S whole seconds before now_ns. */
uint64_t gf_arbiter_window_ns(const struct gpufrac_arbiter_lane* lane, uint64_t now_ns);

/* ---- lease.c, lease_hold.c, lease_pick.c: the lease protocol of one process on one GPU ---- */
uint64_t gf_now_ns(void);

struct gf_view;

struct gf_lease {
  /* NULL while this process has not joined: it could not open the lease file read-write (a tenant
   * changed its mode). It then waits its bound as for a forged lease, runs ungated past it, and
   * tries join (at most every lease_ms) until it can: the host puts the mode back. */
  struct gpufrac_arbiter* arb;
  int (*join)(struct gf_lease* l); /* maps the lease file and sets arb: 0, or -1 */
  uint64_t join_ns;                /* the last attempt */
  const struct gpufrac_arbiter_slots* slots;
  struct gpufrac_arbiter_lane* own;   /* this slot's lane (mapped; in m->table for tests) */
  const char* lanes;                  /* the lanes directory the others' lanes are read from */
  struct gpufrac_arbiter_lane* table; /* tests: every lane in one array instead */
  struct gf_view* view;               /* this process's view of the queue (lease_view.c) */
  uint64_t my_vt;                     /* this slot's vtime as its own charges make it (not the file's) */
  struct gpufrac_arbiter_params p;    /* clamped copy */
  unsigned slot;
  uint64_t token;
  uint32_t weight; /* ppm, from the slots file */
  int strict, high;
  uint32_t pid; /* informational */
  /* Process-local; the caller serialises every call below but gf_lease_admits. */
  uint64_t word;       /* atomic: the lease word this process holds, 0 none */
  int solo;            /* atomic: no other slot was runnable (nor high priority) at the claim or renewal */
  uint64_t start_ns;   /* its start (the claim or the last renewal) */
  uint64_t skip;       /* a designation of its own slot this process made: left to the others */
  uint64_t seen_ns;    /* the last heartbeat this process stored */
  uint64_t last_ns;    /* what its last lease was charged, all its parts (the waiting bound's debt term) */
  uint64_t last_start; /* the start of that lease */
  uint64_t my_active;  /* atomic: the last activity it published for its lease (lost() charges to it) */
  uint64_t local_nb;   /* strict: when its own charges let it run again (not read from the file) */
  uint64_t waiting_ns; /* when it began waiting for the lease, 0 while not waiting */
  uint64_t lost_ns;    /* atomic: when it last found its word taken by another process */
  uint64_t charged_to; /* the end of its last charge on finding its word taken (debt starts after) */
  int placed;          /* its own place was floored at its first lease end (before: only its lane said it) */
};

/* Binds to the slot named by token (m->own, or m->table, must be set). 0, or -1 with the reason in
 * err. */
int gf_lease_init(struct gf_lease* l, const struct gf_arb* m, uint64_t token, uint32_t pid, char* err, size_t err_len);
/* The admission fast path: this process holds the lease, before its deadline, no preemption
 * request pending. Any thread; reads three words. */
static inline int gf_lease_admits(const struct gf_lease* l, uint64_t now_ns) {
  uint64_t w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
  return w != 0 && __atomic_load_n(&l->arb->lease, __ATOMIC_ACQUIRE) == w &&
         __atomic_load_n(&l->arb->preempt, __ATOMIC_RELAXED) == 0 &&
         (int32_t)(gpufrac_lease_deadline(w) - (uint32_t)(now_ns / 1000000u)) > 0;
}
/* Records an admission or a wait (active_ns): the holder is not idle. */
static inline void gf_lease_touch(struct gf_lease* l, uint64_t now_ns) {
  __atomic_store_n(&l->arb->active_ns, now_ns, __ATOMIC_RELAXED);
}

/* The slot is still this container's (the host did not free or give it to another meanwhile). */
static inline int gf_lease_slot_ok(const struct gf_lease* l) {
  const struct gpufrac_arbiter_slot* s = &l->slots->slots[l->slot];
  return __atomic_load_n(&s->state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_ACTIVE &&
         __atomic_load_n(&s->token, __ATOMIC_SEQ_CST) == l->token;
}

enum gf_lease_state { GF_LEASE_HOLD = 0, GF_LEASE_END = 1, GF_LEASE_LOST = 2 };
/* Where this process's lease stands: held, due to end (deadline or a valid preemption request;
 * an invalid request is cleared), or lost (word is then 0). */
enum gf_lease_state gf_lease_state(struct gf_lease* l, uint64_t now_ns);
/* Waits until this process holds the lease. 0; -1 when its slot is gone (freed or taken by another
 * container: the caller stops arbitrating); 1 when it waited past its bound (gf_lease_bound_ns: the
 * caller runs ungated and tries again with gf_lease_try). */
int gf_lease_acquire(struct gf_lease* l);
/* One attempt without waiting (a process running ungated past its bound): heartbeat, then claim or
 * take over where the protocol allows. 1 when it holds the lease, 0 not, -1 its slot is gone. */
int gf_lease_try(struct gf_lease* l);
/* How long this process may wait for the lease before it runs ungated (arbiter_abi.h "Bound"). */
uint64_t gf_lease_bound_ns(const struct gf_lease* l);
/* Ends the lease due to end: renews it (returns 1, still held) or calls drain(arg) (which waits
 * for this process's launches in flight, calling gf_lease_extend as it goes) and releases it to
 * the next slot (returns 0). A lease lost meanwhile is not charged. */
int gf_lease_end(struct gf_lease* l, void (*drain)(void*), void* arg);
/* Keeps a lease held while draining: a new deadline when less than half a lease is left. */
void gf_lease_extend(struct gf_lease* l, uint64_t now_ns);
/* The holder waits (busy: expecting its work done in expect_ns) or stopped waiting (0) for its own
 * GPU work: not idle meanwhile. Returns the word it holds, 0 when it holds none. */
uint64_t gf_lease_busy(struct gf_lease* l, int busy, uint64_t expect_ns);
/* After waiting for its own work since from_ns: when another process took the lease over meanwhile
 * (not a release or renewal of its own), charges this slot from from_ns to now (its work ran past
 * the lease: debt). */
void gf_lease_debt(struct gf_lease* l, uint64_t from_ns);
/* Gives up a held lease at once (the slot is gone): CAS to FREE, wake the waiters. */
void gf_lease_drop(struct gf_lease* l);

/* ---- lease_view.c: this process's own view of the queue (docs/design-queue-lanes.md part 2) ---- */
#define GF_LIE_BACK 1u   /* suspect: the lane's vtime moved back */
#define GF_LIE_UNREAD 2u /* suspect: the lane could not be read (cut short, missing) */
#define GF_LIE_BEHIND 3u /* suspect: the lane stayed far behind the queue while its slot waited */
size_t gf_view_size(void);
void gf_view_init(struct gf_view* v, uint64_t clock);
struct gpufrac_arbiter_lane* gf_view_copy(struct gf_view* v, unsigned i);
/* Slot i's lane as just read (n; NULL: unreadable) and whether it is runnable: monotone, joined at
 * the view clock, its lag behind what it was watched to hold capped at a fixed slack. */
void gf_view_lane(const struct gf_lease* l, unsigned i, const struct gpufrac_arbiter_lane* n, int runnable);
/* Slot i's place in this view (this process's own slot: my_vt). */
uint64_t gf_view_place(const struct gf_lease* l, unsigned i);
uint64_t gf_view_clock(const struct gf_lease* l);
/* Raises the view clock to vt (never lowers it). */
void gf_view_raise(const struct gf_lease* l, uint64_t vt);
/* The lease word w as this process saw it at now, with its holder's last activity as published for
 * w (0: not published): the holding it watched ends when w changes, charged up to that activity. */
void gf_view_watch(const struct gf_lease* l, uint64_t w, uint64_t now, uint64_t active);
/* Notes in this process's own lane that slot i's lane lied (GF_LIE_*). */
void gf_view_suspect(const struct gf_lease* l, unsigned i, uint32_t what);

/* lease_pick.c: slot i's lane as this process sees it: its own lane (mapped), another's read now
 * with pread into its copy (NULL: not in use, or unreadable: cut short, missing). */
const struct gpufrac_arbiter_lane* gf_lease_lane(const struct gf_lease* l, unsigned i);
/* lease_pick.c (internal to the protocol, exposed for tests): the slot the next lease goes to
 * (arbiter_abi.h, "End of a lease"), or -1 when none is runnable (the holder's own slot is, when
 * another of its processes waits). */
int gf_lease_pick(const struct gf_lease* l, uint64_t now_ns);
/* A valid preemption request against this holder: a high-priority runnable slot not its own. */
int gf_lease_preempted(const struct gf_lease* l, uint64_t now_ns);
/* Slot i is runnable at now: a process of it waits (seen recently, and since the slot's last
 * claim); a strict slot only past its not_before. */
int gf_lease_runnable(const struct gf_lease* l, unsigned i, uint64_t now_ns);
/* Slot i is high priority and within its credit. */
int gf_lease_high_eligible(const struct gf_lease* l, unsigned i);
/* Solo: no slot but this one is runnable and none other is high priority (arbiter_abi.h "Solo"). */
int gf_lease_alone(const struct gf_lease* l, uint64_t now_ns);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_ARBITER_H */
