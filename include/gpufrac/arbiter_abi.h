/* The compute arbiter of one GPU (docs/architecture.md "Compute share"): shared memory beside the
 * usage regions that gives the containers with a compute share on that GPU a weighted share of its
 * time. Per GPU, all created by the host fully allocated (posix_fallocate: a full tmpfs is a
 * one-line refusal, never a SIGBUS), on the GPU's own tmpfs <state-dir>/compute/<GPU uuid>.d/:
 *   <uuid>.slots  the slots file: what the host decides (params, slot states, weights, modes,
 *       priorities, tokens, keys); mode 0644, bound READ-ONLY at GPUFRAC_CONTAINER_COMPUTE/<uuid>.slots,
 *       opened O_RDONLY and mapped PROT_READ by the shim;
 *   <uuid>        the lease file: the lease's cache line every shim CASes (the lease word, changes,
 *       preempt, the holder's published fields, vclock); mode 0666, bound read-write at
 *       GPUFRAC_CONTAINER_COMPUTE/<uuid>;
 *   <uuid>.lanes/ the lanes directory (0755): one lane file per slot in use, named by the slot's
 *       container key (<uuid>.lanes/<key>, 256 bytes, mode 0666), the slot's place in the queue
 *       (vtime, heartbeat, charges, history). The directory is bound READ-ONLY at
 *       GPUFRAC_CONTAINER_COMPUTE/<uuid>.lanes in every container of the GPU, and each container's
 *       own lane file is bound read-write at GPUFRAC_CONTAINER_COMPUTE/<uuid>.lane: a container
 *       writes its own lane and no other (through the directory bind every write, chmod, truncate
 *       and unlink is EROFS).
 * The shim maps the lease file and its own lane; it never maps another container's lane (its owner
 * can resize it): it reads 256 bytes of it with pread into its own memory when it consults the
 * queue (at a lease's end or renewal, a takeover, a preemption request), never per launch. A short
 * read is a lane that is unreadable: that slot is not runnable.
 * The shim finds both beside its usage region (<directory of the region>/compute/<uuid of the
 * compute line>) and its slot by the token of the limit file's line
 *     arbiter <uuid> <token: 16 hex digits>
 * (after the device's compute line; limits_abi.h item 1). A device whose weight is the whole GPU
 * (1000000) is never arbitrated: the host sets up no slot for it and the shim skips its line.
 *
 * Trust. Every container with a share on the GPU can write the lease file and its own lane, none can
 * write the slots file or another container's lane. So weights, modes, priorities and the others'
 * places in the queue cannot be forged; a tenant that writes the lease file can hold the lease word,
 * fake busy marks and vclock, and one that writes its own lane can fake its own virtual time,
 * heartbeats and charges. What it gains is
 * bounded by the waiting bound below: a waiting process that the lease has not reached within it
 * runs its launches ungated (what the GPU's own time-slicing gives it), says so once on stderr,
 * reports it in its slot of its own container's usage region (limits_abi.h, compute_bypassed: the
 * tenant cannot erase it), and gates again once it claims the lease through the protocol. A lease file cut short
 * under a mapping (ftruncate) is taken over by the shim's SIGBUS handler: private zero pages, the
 * device no longer arbitrated, said once and reported the same way. The host never maps the lease
 * file (pread, pwrite: limits/host/arbiter_lease.hpp) and puts its size, mode 0666, owner and header
 * back in place at every booking on the GPU and at gc (noted in the slots file: lease_repaired_*). A
 * process that cannot open it read-write (a tenant changed its mode) maps the slots file alone,
 * waits its bound as for a lease that never comes, runs ungated past it (reported), and joins once
 * it can open the file (gf_lease.join).
 *
 * Slots (slots file). The host claims one slot per container and GPU when it books the share (CAS
 * state FREE -> SETUP, writes key, token, weight, flags, created_s, then state ACTIVE; a new slot
 * gets a fresh lane file, vtime = vclock, written in a temporary and renamed in place) and frees it
 * when the booking is released (poststop, a rolled-back start, `gpufrac gc`: ACTIVE -> SETUP by CAS,
 * FREE, its lane file unlinked). The host reads lanes with pread and puts a lane file's size, mode
 * and owner back at booking and gc. A slot left in SETUP
 * by a killed host process is freed by gc once its key has no booking. The shim never writes it.
 *
 * The lease: one word of the lease file, changed only by CAS, every change taking the epoch on:
 *     bits 0..9   holder: slot index + 1, 0 = nobody
 *     bit 10      claimed: a process holds it (0 with a holder: designated to that slot)
 *     bits 11..31 epoch (21 bits, wrapping)
 *     bits 32..63 deadline: CLOCK_MONOTONIC milliseconds, mod 2^32 (compared as a signed
 *                 difference; a deadline more than lease + claim + 1 s ahead is not one any
 *                 process wrote and counts as expired)
 * States: FREE (holder 0), DESIGNATED(s) (the releasing holder chose slot s; any process of s
 * claims it until the deadline, claim_ms after the release), HELD(s) (one process of s holds it).
 * CLOCK_MONOTONIC is the host's for every container (no container gets a time namespace).
 *
 * Rules (no lock anywhere; a process killed at any instruction leaves at most a lease that
 * expires):
 *   - Solo. A holder that found no other runnable slot when it claimed or renewed, and no other
 *     high-priority slot set up on the GPU, is solo: it admits launches with no driver call of its
 *     own but one event every stride launches per stream (stride = K / 8, at most 128, K = lease_ms / d
 *     + 1 up to 1024: a lease's worth of its launches), counted as in gated admission: about one
 *     event record and one query per 128 launches, and its work in flight stays about one lease per stream. At the
 *     end of a solo lease with a competitor runnable it waits for those events (charged) before it
 *     releases; what it leaves unmarked is an eighth of a lease per stream.
 *   - Gated admission (not solo). A process launches (a kernel, a cooperative launch, a graph) only
 *     while the lease word equals the word it claimed (the fencing token: any other process's
 *     change moves the epoch), before the deadline, with no valid preemption request, and with
 *     fewer than K launches not yet known complete on the launch's stream (an event recorded after
 *     each, CU_EVENT_DISABLE_TIMING, retired in order per stream): K = inflight_us / d + 1 (2 to
 *     64; 1 when d is ten inflight_us or more), d the stream's launches' duration as the holder
 *     measures it,
 *     so a stream's work in flight stays under max(inflight_us, one launch) plus one launch, and a
 *     long kernel on one stream never holds back launches on another. At each admission it stores
 *     active_ns. Launches on a capturing stream are not gated (the graph's launch is).
 *   - Busy. A holder waiting for its own GPU work (in the gate, draining, in cuStreamSynchronize,
 *     cuCtxSynchronize, cuEventSynchronize) sets busy = epoch + 1 and busy_until_ns = now + what it
 *     estimates its work in flight still takes (at most busy_ms; the most while it has not measured
 *     its launches yet). A gated holder also moves busy_until_ns on at its admissions (by what its
 *     launch's stream has in flight). It is not idle before busy_until_ns.
 *   - End of a lease (deadline reached, or a valid preemption request). The holder picks the
 *     next slot: among runnable slots (below), high-priority slots whose vtime is at most
 *     vclock + credit (credit_ms of their own GPU time) first, then the least vtime, then the
 *     lowest index. A fair holder whose own vtime, charged so far, is not above the pick's (or
 *     that finds no other runnable slot) renews: CAS to itself with a new deadline, charges the
 *     time since its start and starts again (solo again when nobody else is runnable). Else it
 *     stops admitting, waits for its launches in flight (the overrun is charged), then CAS to
 *     DESIGNATED(pick) or FREE, charges lease start .. now, increments `changes` and wakes every
 *     waiter (futex on `changes`). A strict holder always releases, and its slot's not_before
 *     becomes max(not_before, start - charge) + charge x 1e6 / weight: never more than its share,
 *     alone or not (a start up to one lease late is made good; idle time earns nothing).
 *   - Claim. A waiting process may CAS FREE, DESIGNATED(its slot), or a DESIGNATED past its
 *     deadline to HELD(its slot) with deadline now + lease_ms. It stores now into its lane's
 *     claimed_ns, then writes start_ns, active_ns, busy_until_ns = now, holder_pid and, last,
 *     info_epoch = epoch + 1 (a
 *     reader trusts those fields only while info_epoch matches the lease's epoch), raises vclock to
 *     its slot's vtime (CAS max), and clears a preemption request of its own. A process that
 *     designated its own slot (another process of the container waits) does not claim that
 *     designation itself.
 *   - Takeover. A waiting process may CAS HELD(s) to HELD(its slot) when the holder is past
 *     deadline + grace_ms, and, while it is busy and its published pid names a live process
 *     (kill(pid, 0); in the host PID namespace gpufrac requires, a killed holder is seen at once),
 *     also past min(busy_until_ns, active_ns + busy_ms) + grace_ms (killed, stopped, or stuck in
 *     work longer than it announced); or when it is idle: info_epoch matches, busy does not,
 *     active_ns is more than idle_us old and busy_until_ns (at most busy_ms past active_ns) has
 *     passed, or its pid names no process. Like a release, a takeover
 *     goes to the slot the queue picks next: when that is another slot, the taker CASes to
 *     DESIGNATED(pick) and waits. A taker cannot write the holder's lane: the holder charges
 *     itself when it finds its word gone (lease start .. the last activity it published for the
 *     lease, kept in its memory, at most now), so each lease is charged once, by its holder.
 *   - Debt. A holder that finds its word gone after waiting for its own GPU work charges itself
 *     from the start of that wait (or the end of what it charged when it found the word gone, if
 *     later) to the completion it observed: a kernel that runs past its lease is paid for by its owner, before its next
 * lease.
 *   - Runnable. A waiting process stores now into its lane's seen_ns at least every heartbeat_us;
 *     a slot is runnable while seen_ns is less than runnable_us old and newer than its claimed_ns
 *     (a process of it waits since the slot last got the lease; strict: also past not_before). A
 *     slot that becomes runnable after being idle takes vtime = max(vtime, vclock): start-time fair
 *     queuing; idle time earns no credit. One that stayed runnable is kept within one lease and its
 *     overrun of its own weight behind vclock ((lease_ms + busy_ms) x 1e9 / weight): in the queue's
 *     order it cannot lag more, so a larger lag comes from leases taken over out of turn.
 *   - Preemption. A high-priority waiting process whose slot is within its credit sets preempt =
 *     slot + 1 (CAS from 0, or from a request that is no longer valid). A normal-priority holder
 *     that finds a valid request (a high-priority, runnable slot other than its own) ends its
 *     lease at its next admission (a kernel boundary): the requester waits at most for the
 *     holder's launches in flight (the in-flight bound plus the launch running). The requester is
 *     still charged.
 *   - Charge of n ns to a slot of weight w ppm ending at t: vtime += n x 1000 / w (wrapping;
 *     compared as signed differences), charged_ns += n, leases += 1, history bucket of second
 *     t (CLOCK_MONOTONIC seconds mod 2^24, 16 buckets: second << 40 | ns) += n. `gpufrac status`
 *     sums the buckets of the last 10 whole seconds: the share's achieved compute.
 *   - Waiting is a futex wait on `changes` with a timeout (heartbeat, deadline + grace, or the
 *     holder's idle time, whichever is first); nothing waits on a lock.
 *   - Bound. A process that waits for the lease (not for its own work, not paced by strict mode)
 *     longer than
 *         4 x (lease_ms + grace_ms) + busy_ms + credit_ms + c x (1000000 - w) / w
 *     (c: what its own last lease was charged, all its parts, at most 2 s; w: its weight from the slots file, at
 *     least 10000) stops waiting: the queue could not have kept a runnable slot of that weight
 *     waiting so long (660 ms + 2.3 c at weight 30 %). Its launches on the device then pass
 *     ungated; it keeps its heartbeat, tries to claim the lease at most every lease_ms, and gates
 *     again once it has claimed it.
 *   - Every value read from the lease file is checked before use (indices against slot_count and
 *     the slots file's high-water mark, times compared as wrapping differences, charges read from
 *     it at most 2 s); weights, flags and params come from the slots file only.
 *
 * The layout is versioned: a reader refuses another magic, version, size or slot count (a shim of
 * version 2 meeting these files, or one of version 3 meeting version-2 files, says its arbiter is
 * unusable, in one line, and runs unarbitrated). */
#ifndef GPUFRAC_ARBITER_ABI_H
#define GPUFRAC_ARBITER_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUFRAC_ARBITER_MAGIC 0x42524147u       /* "GARB" little-endian: the lease file */
#define GPUFRAC_ARBITER_SLOTS_MAGIC 0x53524147u /* "GARS": the slots file */
#define GPUFRAC_ARBITER_VERSION 3u              /* 2: slots read-only; 3: a lane file per container */
#define GPUFRAC_ARBITER_SLOTS 256
#define GPUFRAC_ARBITER_HISTORY 16  /* seconds of charges kept per slot */
#define GPUFRAC_ARBITER_WINDOW_S 10 /* the window `gpufrac status` reports */
#define GPUFRAC_ARBITER_KEY 128
#define GPUFRAC_ARBITER_WHOLE 1000000u /* a weight of the whole GPU: never arbitrated */
#define GPUFRAC_ARBITER_SLOTS_SUFFIX ".slots"
#define GPUFRAC_ARBITER_LANES_SUFFIX ".lanes" /* the lanes directory (read-only in containers) */
#define GPUFRAC_ARBITER_LANE_SUFFIX ".lane"   /* a container's own lane (read-write) */
#define GPUFRAC_CONTAINER_COMPUTE "/run/gpufrac/compute"

#define GPUFRAC_ARBITER_FREE 0u
#define GPUFRAC_ARBITER_SETUP 1u
#define GPUFRAC_ARBITER_ACTIVE 2u
#define GPUFRAC_ARBITER_STRICT 1u /* slot flags */
#define GPUFRAC_ARBITER_HIGH 2u
#define GPUFRAC_LEASE_REPAIRED_SIZE 1u /* lease_repaired_what */
#define GPUFRAC_LEASE_REPAIRED_MODE 2u
#define GPUFRAC_LEASE_REPAIRED_OWNER 4u
#define GPUFRAC_LEASE_REPAIRED_HEADER 8u

/* Timing, written by the host at creation; each shim clamps them to the ranges in brackets. */
struct gpufrac_arbiter_params {
  uint32_t lease_ms;     /* 20 [1, 1000]: a lease's length */
  uint32_t grace_ms;     /* 50 [1, 1000]: how long past its deadline a holder keeps it */
  uint32_t claim_ms;     /* 10 [1, 1000]: how long a designation waits for its slot */
  uint32_t idle_us;      /* 2000 [100, 1000000]: a holder idle this long may be taken over */
  uint32_t heartbeat_us; /* 2000 [100, 100000]: how often a waiting process says so */
  uint32_t runnable_us;  /* 10000 [heartbeat x 2, 1000000]: a slot seen this recently is runnable */
  uint32_t inflight_us;  /* 2000 [100, 1000000]: GPU time a gated stream may have in flight */
  uint32_t credit_ms;    /* 100 [0, 10000]: how far ahead of vclock high priority still preempts */
  uint32_t busy_ms;      /* 280 [0, 2000]: the longest wait for its own work a busy holder announces */
  uint32_t pad[3];
};

static inline uint64_t gpufrac_lease_word(uint32_t holder, uint32_t claimed, uint32_t epoch, uint32_t deadline_ms) {
  return (uint64_t)(holder & 0x3ffu) | (uint64_t)(claimed & 1u) << 10 | (uint64_t)(epoch & 0x1fffffu) << 11 |
         (uint64_t)deadline_ms << 32;
}
static inline uint32_t gpufrac_lease_holder(uint64_t w) {
  return (uint32_t)(w & 0x3ffu);
}
static inline uint32_t gpufrac_lease_claimed(uint64_t w) {
  return (uint32_t)(w >> 10) & 1u;
}
static inline uint32_t gpufrac_lease_epoch(uint64_t w) {
  return (uint32_t)(w >> 11) & 0x1fffffu;
}
static inline uint32_t gpufrac_lease_deadline(uint64_t w) {
  return (uint32_t)(w >> 32);
}

/* ---- The slots file (read-only in containers) ---- */
struct gpufrac_arbiter_slot {
  uint32_t state; /* atomic: FREE, SETUP, ACTIVE */
  uint32_t flags; /* STRICT, HIGH */
  uint32_t weight_ppm;
  uint32_t pad0;
  uint64_t token;                /* random, never 0: the limit file's arbiter line names the slot by it */
  uint64_t created_s;            /* CLOCK_REALTIME seconds at setup (gc leaves young slots alone) */
  char key[GPUFRAC_ARBITER_KEY]; /* the container key (<state-dir>/containers/<key>) */
  uint64_t pad1[4];
};

struct gpufrac_arbiter_slots {
  uint32_t magic; /* GPUFRAC_ARBITER_SLOTS_MAGIC */
  uint32_t version;
  uint32_t size;       /* sizeof(struct gpufrac_arbiter_slots) */
  uint32_t slot_count; /* GPUFRAC_ARBITER_SLOTS */
  struct gpufrac_arbiter_params params;
  uint32_t slot_high_water; /* atomic: slots at or above it were never set up */
  uint32_t pad0[3];
  char uuid[96]; /* informational: the GPU */
  /* The host's record of its last repair of the lease file (a tenant resized it, changed its mode
   * or owner, or overwrote its header): `gpufrac status` flags the GPU for a while after it. */
  uint64_t lease_repaired_s;    /* CLOCK_REALTIME seconds, 0 never */
  uint64_t lease_repairs;       /* how many repairs, ever */
  uint64_t lease_repaired_what; /* GPUFRAC_LEASE_REPAIRED_* of the last one */
  uint64_t pad1[7];
  struct gpufrac_arbiter_slot slots[GPUFRAC_ARBITER_SLOTS];
};

/* ---- A lane file (its container writes it; the others read it with pread) ---- */
struct gpufrac_arbiter_suspect { /* a lie this lane's owner saw in another slot's lane */
  uint32_t slot;                 /* slot index + 1, 0 none */
  uint32_t what;
  uint64_t seen_at_s;
};

struct gpufrac_arbiter_lane { /* a slot's queue state, written by its container's shims (made by the host) */
  uint64_t vtime;             /* atomic: virtual time, ns x 1000 / weight, wrapping */
  uint64_t seen_ns;           /* atomic: a process of the slot last waited for the lease then */
  uint64_t not_before_ns;     /* atomic: a strict slot is not runnable before then */
  uint64_t charged_ns;        /* atomic: GPU time charged, ever */
  uint64_t leases;            /* atomic: leases charged, ever */
  uint64_t claimed_ns;        /* atomic: a process of the slot last claimed the lease then */
  uint64_t held_word;         /* atomic: the lease word a process of the slot last claimed or renewed to */
  uint64_t charged_word;      /* atomic: the lease word whose lease the slot last charged itself */
  uint64_t history[GPUFRAC_ARBITER_HISTORY]; /* atomic: (second mod 2^24) << 40 | ns charged */
  /* The lease this slot's process last took over: slot + 1 of its holder, its word, and what it
   * lasted (start .. last activity, as the holder published them). The holder's slot charges itself
   * that, once, when word is its held_word and not its charged_word (its holder was killed). */
  uint32_t took_slot;
  uint32_t pad0;
  uint64_t took_word;
  uint64_t took_ns;
  struct gpufrac_arbiter_suspect suspect[2]; /* lies the owner's view saw in other lanes */
  uint64_t pad1;
};

/* ---- The lease file (read-write in containers) ---- */
struct gpufrac_arbiter {
  uint32_t magic; /* GPUFRAC_ARBITER_MAGIC */
  uint32_t version;
  uint32_t size;       /* sizeof(struct gpufrac_arbiter) */
  uint32_t slot_count; /* GPUFRAC_ARBITER_SLOTS */
  uint64_t pad0[22];
  /* The lease (one cache line). */
  uint64_t lease;      /* atomic: the word above */
  uint32_t changes;    /* atomic: futex word, +1 at each release and takeover */
  uint32_t preempt;    /* atomic: slot + 1 of a high-priority request, 0 none */
  uint32_t info_epoch; /* atomic: epoch + 1 that start_ns, active_ns and holder_pid describe */
  uint32_t busy;       /* atomic: epoch + 1 while the holder waits for its own GPU work */
  uint64_t start_ns;   /* atomic: the holder's lease start */
  uint64_t active_ns;  /* atomic: the holder's last admission or wait */
  uint32_t holder_pid; /* atomic: informational (tests, diagnostics); never used for liveness */
  uint32_t pad1;
  uint64_t vclock;        /* atomic: the vtime of the slot that claimed last (CAS max) */
  uint64_t busy_until_ns; /* atomic: while busy, when the holder expects its work to be done */
};

#ifdef __cplusplus
}
static_assert(sizeof(gpufrac_arbiter_slot) == 192, "slot layout is ABI");
static_assert(sizeof(gpufrac_arbiter_slots) == 256 + 192 * GPUFRAC_ARBITER_SLOTS, "slots file layout is ABI");
static_assert(sizeof(gpufrac_arbiter_lane) == 256, "lane file layout is ABI");
static_assert(sizeof(gpufrac_arbiter) == 256, "lease file layout is ABI");
static_assert(offsetof(gpufrac_arbiter, lease) == 192, "lease line");
#else
_Static_assert(sizeof(struct gpufrac_arbiter_slot) == 192, "slot layout is ABI");
_Static_assert(sizeof(struct gpufrac_arbiter_slots) == 256 + 192 * GPUFRAC_ARBITER_SLOTS, "slots file layout is ABI");
_Static_assert(sizeof(struct gpufrac_arbiter_lane) == 256, "lane file layout is ABI");
_Static_assert(sizeof(struct gpufrac_arbiter) == 256, "lease file layout is ABI");
_Static_assert(offsetof(struct gpufrac_arbiter, lease) == 192, "the lease has its own cache line");
#endif

#endif /* GPUFRAC_ARBITER_ABI_H */
