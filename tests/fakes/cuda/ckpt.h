/* The checkpoint API's channel between a controller and its target (README.md "Checkpoint").
 *
 * A process that initialises CUDA with GPUFRAC_FAKE_NVML_STATE=<file> set publishes one page,
 * "<file>.checkpoint/<pid>", and starts the driver's checkpoint thread, which waits on it (as the
 * real driver's restore thread does inside its target). A controller (any process, the target
 * itself included) opens the page by the target's pid, takes flock on it (one request at a time),
 * writes the operation, bumps `request` and waits until `done` says it was handled. The page of a
 * dead process (or of a reused pid: `start` differs) is stale: its calls get CUDA_ERROR_NOT_INITIALIZED.
 *
 * The gate: the calls that launch work, allocate, free, copy or synchronise pass
 * fake_ckpt_enter/fake_ckpt_leave. While `gate` is set (a lock in progress, LOCKED, CHECKPOINTED)
 * they wait at the entry; a lock waits until none is inside and the process's submitted work is done. */
#ifndef GPUFRAC_FAKE_CUDA_CKPT_H
#define GPUFRAC_FAKE_CUDA_CKPT_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuda.h"

#define FAKE_CKPT_MAGIC 0x54504b43u

struct fake_ckpt_page {
  uint32_t magic;      /* FAKE_CKPT_MAGIC once the page is complete */
  uint32_t state;      /* CUprocessState, as cuCheckpointProcessGetState reports it */
  uint32_t gate;       /* futex: nonzero while the process's calls wait at their entry */
  uint32_t request;    /* futex: bumped by a controller once op and timeout_ms are set */
  uint32_t done;       /* futex: the request handled last */
  uint32_t op;         /* enum fake_ckpt_op */
  uint32_t timeout_ms; /* the lock's */
  int32_t result;      /* CUresult of the request handled last */
  int32_t tid;         /* the checkpoint thread's */
  uint32_t poisoned;   /* a restore failed for lack of memory under GPUFRAC_FAKE_CUDA_RESTORE_OOM=poison */
  uint64_t start;      /* the process's start time (field 22 of /proc/<pid>/stat) */
};

enum fake_ckpt_op { FAKE_CKPT_LOCK = 1, FAKE_CKPT_CHECKPOINT, FAKE_CKPT_RESTORE, FAKE_CKPT_UNLOCK };

/* This process's page, NULL without GPUFRAC_FAKE_NVML_STATE; and its gated calls in progress. */
extern struct fake_ckpt_page* fake_ckpt;
extern uint32_t fake_ckpt_active;

/* cuInit: publishes the page and starts the checkpoint thread (once; nothing without the state). */
void fake_ckpt_init(void);
/* The entry's slow path: waits until the gate opens. */
void fake_ckpt_wait(void);

static inline long fake_futex(uint32_t* word, int op, uint32_t value, const struct timespec* timeout) {
  return syscall(SYS_futex, word, op, value, timeout, NULL, 0);
}

/* Returns what fake_ckpt_leave takes. */
static inline int fake_ckpt_enter(void) {
  if (__atomic_load_n(&fake_ckpt, __ATOMIC_ACQUIRE) == NULL) return 0;
  __atomic_add_fetch(&fake_ckpt_active, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&fake_ckpt->gate, __ATOMIC_SEQ_CST) != 0) fake_ckpt_wait();
  return 1;
}

static inline void fake_ckpt_leave(int entered) {
  if (entered) __atomic_sub_fetch(&fake_ckpt_active, 1, __ATOMIC_SEQ_CST);
}

/* contents.c: device memory's contents, moved to host copies by a checkpoint and back by a restore.
 * Both return CUDA_ERROR_OUT_OF_MEMORY (nothing moved) when host memory or the mapping is refused. */
CUresult fake_contents_out(void);
CUresult fake_contents_in(void);
/* An allocation freed: its contents go. */
void fake_contents_drop(uint64_t base);

#endif /* GPUFRAC_FAKE_CUDA_CKPT_H */
