/* The shape every counted allocation and free shares: decide whether the bytes count, reserve
 * them before the driver call, settle after it, and remember what this process charged. */
#include "gf_charge.h"

struct gf_table gf_ptrs, gf_handles, gf_arrays, gf_mipmaps, gf_pools;

#define GF_SIZE_BITS 56 /* table values: (limit index + 1) << 56 | bytes */
static int g_log_track;
static int g_log_refusal; /* the refusal line, once per process */

/* This thread's view of the other processes' usage (gf_region.h); the shim is preloaded, so its
 * TLS is in the static block. */
static __thread struct gf_usage_cache g_cache __attribute__((tls_model("initial-exec")));

void gf_charge_after_fork(void) {
  g_cache.valid = 0; /* the forking thread's view; the child has its own slot */
  g_log_refusal = 0;
  gf_table_forget(&gf_ptrs);
  gf_table_forget(&gf_handles);
  gf_table_forget(&gf_arrays);
  gf_table_forget(&gf_mipmaps);
  gf_table_forget(&gf_pools);
}

enum { GF_RESERVED = 0, GF_OVER_LIMIT = 1, GF_NO_LEND = 2 };

/* A device with a burst line: the reservation stands only within what the container may hold now
 * (gf_burst_room); past it the bytes are given back. */
static int within_room(struct gpufrac_region* r, struct gpufrac_slot* s, int idx, uint64_t n, uint64_t* in_use) {
  uint64_t used = gf_region_usage(r, s, (unsigned)idx, &g_cache);
  if (gf_burst_admits(idx, used)) return GF_RESERVED;
  gf_region_release(r, s, (unsigned)idx, n, &g_cache);
  *in_use = used - n;
  return GF_NO_LEND;
}

static int try_reserve(struct gpufrac_region* r, struct gpufrac_slot* s, int idx, uint64_t n, uint64_t* in_use) {
  const struct gf_device_limit* d = &gf_g.cfg.devices[idx];
  if (GF_UNLIKELY(gf_region_reserve(r, s, (unsigned)idx, n, d->limit, in_use, &g_cache) != 0)) {
    /* Over the limit: bytes of processes that died may still be counted. */
    if (gf_reclaim_thorough() == 0 || gf_region_reserve(r, s, (unsigned)idx, n, d->limit, in_use, &g_cache) != 0) {
      return GF_OVER_LIMIT;
    }
  }
  return GF_LIKELY(d->request == 0) ? GF_RESERVED : within_room(r, s, idx, n, in_use);
}

/* on-limit: wait: tries again every few milliseconds until the device's timeout. */
static int wait_reserve(struct gpufrac_region* r, struct gpufrac_slot* s, int idx, uint64_t n, uint64_t* in_use) {
  uint64_t deadline = gf_now_ms() + gf_g.cfg.devices[idx].wait_ms;
  int why = GF_OVER_LIMIT;
  while (why != GF_RESERVED && gf_now_ms() < deadline) {
    gf_sleep_ms(10);
    why = try_reserve(r, s, idx, n, in_use);
  }
  return why;
}

CUresult gf_reserve(int idx, uint64_t n, const char* api) {
  struct gpufrac_region* r = gf_g.region;
  struct gpufrac_slot* s = r != NULL ? gf_slot() : NULL;
  if (GF_UNLIKELY(s == NULL)) return CUDA_ERROR_OUT_OF_MEMORY; /* logged where the region or slot failed */
  uint64_t in_use = 0;
  int why = try_reserve(r, s, idx, n, &in_use);
  if (GF_LIKELY(why == GF_RESERVED)) return CUDA_SUCCESS;
  if (gf_g.cfg.devices[idx].wait_ms != 0) why = wait_reserve(r, s, idx, n, &in_use);
  if (why == GF_RESERVED) return CUDA_SUCCESS;
  if (why == GF_NO_LEND) {
    gf_log_no_lend(api, n, idx, in_use);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const struct gf_device_limit* d = &gf_g.cfg.devices[idx];
  gf_log_once(&g_log_refusal, "%s of %llu refused: limit %llu on %s, %llu in use by this container", api,
              (unsigned long long)n, (unsigned long long)d->limit, d->uuid, (unsigned long long)in_use);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

void gf_release(int idx, uint64_t n) {
  struct gpufrac_region* r = __atomic_load_n(&gf_g.region, __ATOMIC_RELAXED);
  struct gpufrac_slot* s = r != NULL ? gf_slot() : NULL;
  if (s != NULL) gf_region_release(r, s, (unsigned)idx, n, &g_cache);
}

uint64_t gf_in_use(int idx) {
  return gf_g.region != NULL ? gf_region_usage(gf_g.region, gf_slot_if_claimed(), (unsigned)idx, &g_cache) : 0;
}

void gf_track(struct gf_table* t, uint64_t key, int idx, uint64_t n) {
  if (n >> GF_SIZE_BITS == 0 && gf_table_insert(t, key, (uint64_t)(idx + 1) << GF_SIZE_BITS | n) == 0) return;
  gf_log_once(&g_log_track, "cannot record an allocation of %llu bytes; it stays counted until the process exits",
              (unsigned long long)n);
}

int gf_untrack(struct gf_table* t, uint64_t key, int* idx, uint64_t* n) {
  uint64_t v;
  if (GF_LIKELY(!gf_table_remove(t, key, &v))) return 0;
  *idx = (int)(v >> GF_SIZE_BITS) - 1;
  *n = v & ((1ull << GF_SIZE_BITS) - 1);
  return 1;
}

/* Reserves n bytes on limit index idx (GF_UNLIMITED passes); err is the index lookup's error. */
static enum gf_charge charge_index(int idx, CUresult err, uint64_t n, const char* api, CUresult* rc) {
  *rc = err;
  if (idx == GF_UNLIMITED) return err == CUDA_SUCCESS ? GF_PASS : GF_REFUSED;
  if (n == 0) return GF_PASS; /* the driver refuses a zero size itself */
  *rc = gf_reserve(idx, n, api);
  return *rc == CUDA_SUCCESS ? GF_COUNTED : GF_REFUSED;
}

/* Outside GF_MODE_ACTIVE every call gets the same answer: 1 with it in *how (and *rc). */
static int inactive(enum gf_charge* how, CUresult* rc) {
  int mode = gf_mode();
  if (GF_LIKELY(mode == GF_MODE_ACTIVE)) return 0;
  *how = mode == GF_MODE_INERT ? GF_PASS : GF_REFUSED;
  if (*how == GF_REFUSED) *rc = CUDA_ERROR_OUT_OF_MEMORY; /* GF_MODE_REFUSE_ALL */
  return 1;
}

enum gf_charge gf_charge_device(CUdevice dev, uint64_t n, const char* api, int* idx, CUresult* rc) {
  enum gf_charge how;
  if (inactive(&how, rc)) return how;
  CUresult err;
  *idx = gf_device_index(dev, &err);
  return charge_index(*idx, err, n, api, rc);
}

enum gf_charge gf_charge_current(uint64_t n, const char* api, int* idx, CUresult* rc) {
  enum gf_charge how;
  if (inactive(&how, rc)) return how;
  CUresult err;
  *idx = gf_current_index(&err);
  return charge_index(*idx, err, n, api, rc);
}

void gf_settle(CUresult rc, struct gf_table* t, uint64_t key, int idx, uint64_t n) {
  if (rc == CUDA_SUCCESS) {
    gf_track(t, key, idx, n);
  } else {
    gf_release(idx, n);
  }
}

struct gf_held gf_free_begin(struct gf_table* t, uint64_t key) {
  struct gf_held h = {0, 0, 0};
  h.tracked = gf_untrack(t, key, &h.idx, &h.n);
  return h;
}

CUresult gf_free_end(CUresult rc, struct gf_table* t, uint64_t key, struct gf_held h) {
  if (!h.tracked) return rc;
  if (rc == CUDA_SUCCESS) {
    gf_release(h.idx, h.n);
  } else {
    gf_track(t, key, h.idx, h.n);
  }
  return rc;
}
