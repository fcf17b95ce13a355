/* The arbiter's files (arbiter_abi.h): format, checks and mapping, the clamped params, and the
 * charge of a lease to a lane with its per-second history. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gf_arbiter.h"

#define GF_HISTORY_SECOND_BITS 24
#define GF_HISTORY_NS_MASK ((1ull << 40) - 1)

void gf_arbiter_default_params(struct gpufrac_arbiter_params* p) {
  *p = (struct gpufrac_arbiter_params){20, 50, 10, 2000, 2000, 10000, 2000, 100, 280, {0, 0, 0}};
}

void gf_arbiter_slots_format(struct gpufrac_arbiter_slots* s, const char* gpu_uuid,
                             const struct gpufrac_arbiter_params* p) {
  s->version = GPUFRAC_ARBITER_VERSION;
  s->size = (uint32_t)sizeof *s;
  s->slot_count = GPUFRAC_ARBITER_SLOTS;
  s->params = *p;
  snprintf(s->uuid, sizeof s->uuid, "%s", gpu_uuid);
  __atomic_store_n(&s->magic, GPUFRAC_ARBITER_SLOTS_MAGIC, __ATOMIC_SEQ_CST);
}

void gf_arbiter_format(struct gpufrac_arbiter* a) {
  a->version = GPUFRAC_ARBITER_VERSION;
  a->size = (uint32_t)sizeof *a;
  a->slot_count = GPUFRAC_ARBITER_SLOTS;
  __atomic_store_n(&a->magic, GPUFRAC_ARBITER_MAGIC, __ATOMIC_SEQ_CST);
}

static int check_header(uint32_t magic, uint32_t want, uint32_t version, uint32_t size, size_t want_size,
                        uint32_t slots, char* err, size_t err_len) {
  if (magic != want) {
    snprintf(err, err_len, "wrong magic 0x%08x; accepted: 0x%08x (gpufrac compute arbiter)", magic, want);
  } else if (version != GPUFRAC_ARBITER_VERSION) {
    snprintf(err, err_len, "arbiter version %u; accepted: %u", version, GPUFRAC_ARBITER_VERSION);
  } else if (size != want_size || slots != GPUFRAC_ARBITER_SLOTS) {
    snprintf(err, err_len, "arbiter size %u with %u slots; accepted: %zu with %d", size, slots, want_size,
             GPUFRAC_ARBITER_SLOTS);
  } else {
    return 0;
  }
  return -1;
}

int gf_arbiter_check(const struct gpufrac_arbiter* a, char* err, size_t err_len) {
  return check_header(__atomic_load_n(&a->magic, __ATOMIC_SEQ_CST), GPUFRAC_ARBITER_MAGIC, a->version, a->size,
                      sizeof *a, a->slot_count, err, err_len);
}

int gf_arbiter_slots_check(const struct gpufrac_arbiter_slots* s, char* err, size_t err_len) {
  return check_header(__atomic_load_n(&s->magic, __ATOMIC_SEQ_CST), GPUFRAC_ARBITER_SLOTS_MAGIC, s->version, s->size,
                      sizeof *s, s->slot_count, err, err_len);
}

/* path opened (read-write or read-only), its size checked, mapped MAP_SHARED; NULL with err. The lease
 * file (writable) may have grown (a tenant wrote past its end): its first size bytes are mapped. */
static void* map_file(const char* path, size_t size, int writable, char* err, size_t err_len) {
  int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    int e = errno;
    snprintf(err, err_len, "%s: cannot open %s: %s", path, writable ? "read-write" : "read-only", strerror(e));
    errno = e; /* the caller tells a mode that keeps it out (EACCES) from the rest */
    return NULL;
  }
  off_t at = lseek(fd, 0, SEEK_END); /* not fstat: GLIBC_2.33 when built on a newer glibc */
  if (at < (off_t)size || (!writable && at != (off_t)size)) {
    snprintf(err, err_len, "%s: not a file of %zu bytes", path, size);
    close(fd);
    return NULL;
  }
  void* m = mmap(NULL, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  int map_errno = errno;
  close(fd);
  if (m == MAP_FAILED) {
    snprintf(err, err_len, "%s: cannot map: %s", path, strerror(map_errno));
    return NULL;
  }
  return m;
}

void gf_arbiter_unmap(struct gf_arb* m) {
  if (m->lease != NULL) munmap(m->lease, sizeof *m->lease);
  if (m->slots != NULL) munmap(m->slots, sizeof *m->slots);
  if (m->own != NULL) munmap(m->own, sizeof *m->own);
  m->lease = NULL;
  m->slots = NULL;
  m->own = NULL;
}

int gf_arbiter_map_lane(const char* lane_path, const char* lanes_dir, struct gf_arb* out, char* err, size_t err_len) {
  if (strlen(lanes_dir) >= sizeof out->lanes) {
    snprintf(err, err_len, "%s: path too long; accepted: at most %zu bytes", lanes_dir, sizeof out->lanes - 1);
    return -1;
  }
  struct gpufrac_arbiter_lane* own = map_file(lane_path, sizeof *own, 1, err, err_len);
  if (own == NULL) return -1;
  snprintf(out->lanes, sizeof out->lanes, "%s", lanes_dir);
  out->own = own;
  return 0;
}

int gf_arbiter_map_slots(const char* slots_path, struct gf_arb* out, char* err, size_t err_len) {
  char why[256];
  out->slots = map_file(slots_path, sizeof *out->slots, 0, err, err_len);
  if (out->slots == NULL) return -1;
  if (gf_arbiter_slots_check(out->slots, why, sizeof why) == 0) return 0;
  snprintf(err, err_len, "%s: %s", slots_path, why);
  munmap(out->slots, sizeof *out->slots);
  out->slots = NULL;
  return -1;
}

int gf_arbiter_map_lease(const char* lease_path, struct gf_arb* out, char* err, size_t err_len) {
  char why[256];
  struct gpufrac_arbiter* a = map_file(lease_path, sizeof *a, 1, err, err_len);
  if (a == NULL) return -1;
  if (gf_arbiter_check(a, why, sizeof why) != 0) {
    snprintf(err, err_len, "%s: %s", lease_path, why);
    munmap(a, sizeof *a);
    return -1;
  }
  __atomic_store_n(&out->lease, a, __ATOMIC_RELEASE);
  return 0;
}

int gf_arbiter_map(const char* lease_path, const char* slots_path, struct gf_arb* out, char* err, size_t err_len) {
  char why[256];
  out->lease = map_file(lease_path, sizeof *out->lease, 1, err, err_len);
  out->slots = out->lease != NULL ? map_file(slots_path, sizeof *out->slots, 0, err, err_len) : NULL;
  if (out->slots == NULL) return gf_arbiter_unmap(out), -1;
  const char* bad = gf_arbiter_check(out->lease, why, sizeof why) != 0         ? lease_path
                    : gf_arbiter_slots_check(out->slots, why, sizeof why) != 0 ? slots_path
                                                                               : NULL;
  if (bad == NULL) return 0;
  snprintf(err, err_len, "%s: %s", bad, why);
  gf_arbiter_unmap(out);
  return -1;
}

static uint32_t clamp(uint32_t v, uint32_t lo, uint32_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

void gf_arbiter_params(const struct gpufrac_arbiter_slots* s, struct gpufrac_arbiter_params* out) {
  struct gpufrac_arbiter_params p;
  memcpy(&p, (const void*)&s->params, sizeof p); /* read once: a writer cannot change it between checks */
  out->lease_ms = clamp(p.lease_ms, 1, 1000);
  out->grace_ms = clamp(p.grace_ms, 1, 1000);
  out->claim_ms = clamp(p.claim_ms, 1, 1000);
  out->idle_us = clamp(p.idle_us, 100, 1000000);
  out->heartbeat_us = clamp(p.heartbeat_us, 100, 100000);
  out->runnable_us = clamp(p.runnable_us, out->heartbeat_us * 2, 1000000);
  out->inflight_us = clamp(p.inflight_us, 100, 1000000);
  out->credit_ms = clamp(p.credit_ms, 0, 10000);
  out->busy_ms = clamp(p.busy_ms, 0, 2000);
  out->pad[0] = out->pad[1] = out->pad[2] = 0;
}

unsigned gf_arbiter_slots_in_use(const struct gpufrac_arbiter_slots* s) {
  uint32_t hw = __atomic_load_n(&s->slot_high_water, __ATOMIC_ACQUIRE);
  return hw < GPUFRAC_ARBITER_SLOTS ? hw : GPUFRAC_ARBITER_SLOTS;
}

uint32_t gf_arbiter_weight(const struct gpufrac_arbiter_slot* s) {
  return clamp(__atomic_load_n(&s->weight_ppm, __ATOMIC_RELAXED), 1, 1000000);
}

/* Adds ns to the bucket of second sec (mod 2^24): a bucket holding an older second starts over,
 * one holding a newer second keeps it (this charge is too old to show). */
static void history_add(struct gpufrac_arbiter_lane* s, uint64_t sec, uint64_t ns) {
  uint64_t* b = &s->history[sec % GPUFRAC_ARBITER_HISTORY];
  uint64_t mod = sec & ((1ull << GF_HISTORY_SECOND_BITS) - 1);
  uint64_t old = __atomic_load_n(b, __ATOMIC_RELAXED), next;
  do {
    uint64_t old_sec = old >> 40;
    int32_t age = (int32_t)((uint32_t)(mod - old_sec) << 8) >> 8; /* signed, 24 bits */
    if (age < 0) return;
    uint64_t base = age == 0 ? old & GF_HISTORY_NS_MASK : 0;
    uint64_t sum = base + ns > GF_HISTORY_NS_MASK ? GF_HISTORY_NS_MASK : base + ns;
    next = mod << 40 | sum;
  } while (!__atomic_compare_exchange_n(b, &old, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* A strict slot runs again when its charges, spread at its weight, catch up with the clock: from
 * the lease's start (or the previous pacing, if later) the lease's charge divided by the weight.
 * A start up to one lease late (the waiting process woke late) is made good, never more: idle
 * time earns no credit. */
static void pace(struct gpufrac_arbiter_lane* s, uint64_t ns, uint64_t end_ns, uint32_t w) {
  uint64_t start = end_ns - ns, from = start - ns, cur = __atomic_load_n(&s->not_before_ns, __ATOMIC_SEQ_CST), next;
  do {
    uint64_t base = (int64_t)(cur - from) > 0 ? cur : from;
    next = base + ns * 1000000u / w;
  } while (!__atomic_compare_exchange_n(&s->not_before_ns, &cur, next, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
}

void gf_arbiter_charge(struct gpufrac_arbiter_lane* s, uint64_t ns, uint64_t end_ns, uint32_t w, int strict) {
  if (s == NULL) return;
  w = clamp(w, 1, 1000000);
  __atomic_fetch_add(&s->vtime, ns * 1000u / w, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&s->charged_ns, ns, __ATOMIC_RELAXED);
  __atomic_fetch_add(&s->leases, 1, __ATOMIC_RELAXED);
  history_add(s, end_ns / 1000000000u, ns);
  if (strict && w < 1000000) pace(s, ns, end_ns, w);
}

uint64_t gf_arbiter_window_ns(const struct gpufrac_arbiter_lane* lane, uint64_t now_ns) {
  if (lane == NULL) return 0;
  uint64_t now_sec = (now_ns / 1000000000u) & ((1ull << GF_HISTORY_SECOND_BITS) - 1), sum = 0;
  for (unsigned k = 0; k < GPUFRAC_ARBITER_HISTORY; k++) {
    uint64_t b = __atomic_load_n(&lane->history[k], __ATOMIC_RELAXED);
    int32_t age = (int32_t)((uint32_t)(now_sec - (b >> 40)) << 8) >> 8;
    if (age >= 1 && age <= GPUFRAC_ARBITER_WINDOW_S) sum += b & GF_HISTORY_NS_MASK;
  }
  return sum;
}
