/* The compute arbiter of a GPU (gpufrac/arbiter_abi.h): mapping and checks, slots, charges and
 * history, and the lease protocol. Shared by the shim, the host library and the stress test. */
#ifndef GPUFRAC_SHIM_GF_ARBITER_H
#define GPUFRAC_SHIM_GF_ARBITER_H

#include <stddef.h>
#include <stdint.h>

#include "gpufrac/arbiter_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- arbiter.c: the file ---- */
/* The defaults the host writes (arbiter_abi.h). */
void gf_arbiter_default_params(struct gpufrac_arbiter_params* p);
/* Fills a zeroed mapping: header, params and GPU uuid (host, before anyone else maps it). */
void gf_arbiter_format(struct gpufrac_arbiter* a, const char* gpu_uuid, const struct gpufrac_arbiter_params* p);
/* Checks magic, version, size and slot count. 0, or -1 with the reason in err. */
int gf_arbiter_check(const struct gpufrac_arbiter* a, char* err, size_t err_len);
/* Opens path read-write (never following a symlink), checks its size and header, maps it
 * MAP_SHARED. The mapping, or NULL with the reason in err. */
struct gpufrac_arbiter* gf_arbiter_map(const char* path, char* err, size_t err_len);
/* The header's params, each clamped to its range (arbiter_abi.h). */
void gf_arbiter_params(const struct gpufrac_arbiter* a, struct gpufrac_arbiter_params* out);
/* Slots that may be in use: [0, min(slot_high_water, GPUFRAC_ARBITER_SLOTS)). */
unsigned gf_arbiter_slots_in_use(const struct gpufrac_arbiter* a);
/* A slot's weight clamped to 1..1000000. */
uint32_t gf_arbiter_weight(const struct gpufrac_arbiter_slot* s);
/* a < b as virtual times (wrapping). */
static inline int gf_vt_before(uint64_t a, uint64_t b) {
  return (int64_t)(a - b) < 0;
}

/* ---- arbiter_slots.c: the host's slot setup and release, lookup ---- */
/* Sets up a slot for key with token (the slot already holding key is updated in place and keeps
 * its token: read it back). Index, or -1 when every slot is taken. */
int gf_arbiter_setup(struct gpufrac_arbiter* a, const char* key, uint64_t token, uint32_t weight_ppm, uint32_t flags,
                     uint64_t created_s);
/* Frees every ACTIVE or SETUP slot whose key is key. Returns how many. */
unsigned gf_arbiter_release_key(struct gpufrac_arbiter* a, const char* key);
/* Frees slot i (ACTIVE or SETUP). 1 when it did. */
int gf_arbiter_release(struct gpufrac_arbiter* a, unsigned i);
/* The ACTIVE slot whose token is token, or -1. */
int gf_arbiter_find_token(const struct gpufrac_arbiter* a, uint64_t token);

/* ---- arbiter.c: charges and history ---- */
/* Charges ns of GPU time ending at end_ns to slot i of weight w ppm (strict: its not_before too). */
void gf_arbiter_charge(struct gpufrac_arbiter* a, unsigned i, uint64_t ns, uint64_t end_ns, uint32_t w, int strict);
/* GPU time charged to slot i in the GPUFRAC_ARBITER_WINDOW_S whole seconds before now_ns. */
uint64_t gf_arbiter_window_ns(const struct gpufrac_arbiter* a, unsigned i, uint64_t now_ns);

/* ---- lease.c, lease_pick.c: the lease protocol of one process on one GPU ---- */
uint64_t gf_now_ns(void);

struct gf_lease {
  struct gpufrac_arbiter* arb;
  struct gpufrac_arbiter_params p; /* clamped copy */
  unsigned slot;
  uint64_t token;
  uint32_t weight; /* ppm, from this process's own limit file */
  int strict, high;
  uint32_t pid; /* informational */
  /* Process-local; the caller serialises every call below but gf_lease_admits. */
  uint64_t word;     /* atomic: the lease word this process holds, 0 none */
  uint64_t start_ns; /* its start (the claim or the last renewal) */
  uint64_t skip;     /* a designation of its own slot this process made: left to the others */
  uint64_t seen_ns;  /* the last heartbeat this process stored */
};

/* Binds to the slot named by token. 0, or -1 with the reason in err. */
int gf_lease_init(struct gf_lease* l, struct gpufrac_arbiter* arb, uint64_t token, uint32_t weight, int strict,
                  int high, uint32_t pid, char* err, size_t err_len);
/* The admission fast path: this process holds the lease, before its deadline, no preemption
 * request pending. Any thread; reads two words. */
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
  const struct gpufrac_arbiter_slot* s = &l->arb->slots[l->slot];
  return __atomic_load_n(&s->state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_ACTIVE &&
         __atomic_load_n(&s->token, __ATOMIC_SEQ_CST) == l->token;
}

enum gf_lease_state { GF_LEASE_HOLD = 0, GF_LEASE_END = 1, GF_LEASE_LOST = 2 };
/* Where this process's lease stands: held, due to end (deadline or a valid preemption request;
 * an invalid request is cleared), or lost (word is then 0). */
enum gf_lease_state gf_lease_state(struct gf_lease* l, uint64_t now_ns);
/* Blocks until this process holds the lease. 0, or -1 when its slot is gone (freed or taken by
 * another container: the caller stops arbitrating). */
int gf_lease_acquire(struct gf_lease* l);
/* Ends the lease due to end: renews it (returns 1, still held) or calls drain(arg) (which waits
 * for this process's launches in flight, calling gf_lease_extend as it goes) and releases it to
 * the next slot (returns 0). A lease lost meanwhile is not charged. */
int gf_lease_end(struct gf_lease* l, void (*drain)(void*), void* arg);
/* Keeps a lease held while draining: a new deadline when less than half a lease is left. */
void gf_lease_extend(struct gf_lease* l, uint64_t now_ns);
/* The holder waits (1) or stopped waiting (0) for its own GPU work: not idle meanwhile. */
void gf_lease_busy(struct gf_lease* l, int busy);
/* Gives up a held lease at once (the slot is gone): CAS to FREE, wake the waiters. */
void gf_lease_drop(struct gf_lease* l);

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

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_ARBITER_H */
