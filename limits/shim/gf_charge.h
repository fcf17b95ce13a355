/* The memory accounting of one process (charge.c): reserve and release on a limit index with the
 * refusal message, what this process allocated (for frees), and the shape every counted allocation
 * and free shares. Above gf_burst.h (how far past its request a container may go) and gf_shim.h
 * (the configuration and this process's region slot). Internal. */
#ifndef GPUFRAC_SHIM_GF_CHARGE_H
#define GPUFRAC_SHIM_GF_CHARGE_H

#include "gf_burst.h"
#include "gf_shim.h"

/* Reserves n bytes on limited device idx for api. CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gf_reserve(int idx, uint64_t n, const char* api);
void gf_release(int idx, uint64_t n);
/* Bytes in use on limited device idx by the container (for reporting). */
uint64_t gf_in_use(int idx);
/* In a fork child: forgets the forking thread's cached view of the other slots and the parent's
 * pointers. */
void gf_charge_after_fork(void);

/* What this process allocated, for frees. */
extern struct gf_table gf_ptrs;    /* CUdeviceptr from cuMemAlloc*, pitch, managed, async */
extern struct gf_table gf_handles; /* CUmemGenericAllocationHandle from cuMemCreate */
extern struct gf_table gf_arrays;  /* CUarray */
extern struct gf_table gf_mipmaps; /* CUmipmappedArray */
extern struct gf_table gf_pools;   /* CUmemoryPool -> device ordinal + 1 */
/* Records key -> (idx, n); keeps the bytes charged (never lost) if the table cannot take it. */
void gf_track(struct gf_table* t, uint64_t key, int idx, uint64_t n);
/* Removes key; returns 1 with its (idx, n), or 0 when this process did not charge it. */
int gf_untrack(struct gf_table* t, uint64_t key, int* idx, uint64_t* n);

/* The common shape of a counted allocation. */
enum gf_charge { GF_PASS = 0, GF_COUNTED = 1, GF_REFUSED = 2 };
/* Decides how n bytes on device dev are counted: GF_PASS (call the driver uncounted),
 * GF_COUNTED (n reserved on *idx: call the driver, then gf_settle), GF_REFUSED (return *rc). */
enum gf_charge gf_charge_device(CUdevice dev, uint64_t n, const char* api, int* idx, CUresult* rc);
/* The same on the calling thread's current device; no context refuses with the driver's error. */
enum gf_charge gf_charge_current(uint64_t n, const char* api, int* idx, CUresult* rc);
/* After the driver returned rc for a GF_COUNTED allocation: success records key in t, failure
 * gives the reservation back. */
void gf_settle(CUresult rc, struct gf_table* t, uint64_t key, int idx, uint64_t n);
/* A free in two steps around the driver call: take key out of t first (so the driver cannot
 * hand the same address to another thread while it is still recorded), then on success give its
 * bytes back, on failure record it again. Keys this process never charged pass through. */
struct gf_held {
  int tracked;
  int idx;
  uint64_t n;
};
struct gf_held gf_free_begin(struct gf_table* t, uint64_t key);
CUresult gf_free_end(CUresult rc, struct gf_table* t, uint64_t key, struct gf_held held);
/* Calls the driver again while it refuses a counted allocation for lack of memory and
 * gf_after_oom says so (burstable memory: a reclaim, or on-limit: wait). */
#define GF_RETRY_OOM(how, idx, n, api, rc, call)                                                           \
  do {                                                                                                     \
    if (GF_UNLIKELY((rc) == CUDA_ERROR_OUT_OF_MEMORY) && (how) == GF_COUNTED) {                            \
      struct gf_oom_state gf_st_ = {0, 0};                                                                 \
      while ((rc) == CUDA_ERROR_OUT_OF_MEMORY && gf_after_oom((idx), (n), gf_in_use(idx), (api), &gf_st_)) \
        (rc) = (call);                                                                                     \
    }                                                                                                      \
  } while (0)

#endif /* GPUFRAC_SHIM_GF_CHARGE_H */
