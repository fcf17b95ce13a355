/* The checkpoint API, the controller's side (ckpt.h): cuCheckpointProcess* by the target's pid.
 * Every call needs a successful cuInit in the caller and GPUFRAC_FAKE_NVML_STATE (the directory the
 * pages are in; CUDA_ERROR_NOT_SUPPORTED without it); a pid without a live page is
 * CUDA_ERROR_NOT_INITIALIZED, as a pid without CUDA is on a real driver. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ckpt.h"
#include "drvlimit.h"
#include "fake_cuda.h"
#include "procname.h"

struct channel {
  int fd;
  char pid[16];
  struct fake_ckpt_page* page;
};

/* The process a pid or any of its thread ids names (its Tgid), 0 when there is none. */
static int tgid_of(int pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE* f = fopen(path, "re");
  int tgid = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "Tgid: %d", &tgid) == 1) break;
  if (f != NULL) fclose(f);
  return tgid;
}

static int alive(const struct channel* c) {
  return fake_start_time(c->pid) == c->page->start;
}

static CUresult open_channel(int pid, struct channel* c) {
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS) return rc;
  const char* state = getenv("GPUFRAC_FAKE_NVML_STATE");
  if (state == NULL || *state == '\0') return CUDA_ERROR_NOT_SUPPORTED;
  if (pid <= 0) return CUDA_ERROR_INVALID_VALUE;
  const int tgid = tgid_of(pid);
  if (tgid <= 0) return CUDA_ERROR_NOT_INITIALIZED;
  char path[4200], name[FAKE_NAME_MAX];
  fake_name_of_pid(state, tgid, name, sizeof name); /* the page of a process of another PID namespace */
  snprintf(path, sizeof path, "%s.checkpoint/%s", state, name);
  snprintf(c->pid, sizeof c->pid, "%d", tgid);
  struct stat st;
  c->fd = open(path, O_RDWR | O_CLOEXEC);
  if (c->fd < 0) return CUDA_ERROR_NOT_INITIALIZED;
  void* m = fstat(c->fd, &st) == 0 && st.st_size >= 4096
                ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0)
                : MAP_FAILED;
  if (m == MAP_FAILED) return close(c->fd), CUDA_ERROR_NOT_INITIALIZED;
  c->page = m;
  if (c->page->magic != FAKE_CKPT_MAGIC || !alive(c)) {
    munmap(m, 4096), close(c->fd);
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  return CUDA_SUCCESS;
}

static void close_channel(struct channel* c) {
  munmap(c->page, 4096);
  close(c->fd); /* drops the flock */
}

/* One request, served by the target's checkpoint thread; waits for it (a lock without a timeout as
 * long as the target's work runs), or until the target dies (CUDA_ERROR_NOT_INITIALIZED). */
static CUresult request(int pid, enum fake_ckpt_op op, unsigned timeout_ms) {
  struct channel c;
  CUresult rc = open_channel(pid, &c);
  if (rc != CUDA_SUCCESS) return rc;
  flock(c.fd, LOCK_EX); /* one controller at a time */
  struct fake_ckpt_page* p = c.page;
  p->op = op;
  p->timeout_ms = timeout_ms;
  const uint32_t r = __atomic_add_fetch(&p->request, 1, __ATOMIC_SEQ_CST);
  fake_futex(&p->request, FUTEX_WAKE, INT_MAX, NULL);
  uint32_t d;
  rc = CUDA_SUCCESS;
  while ((d = __atomic_load_n(&p->done, __ATOMIC_SEQ_CST)) != r) {
    const struct timespec ts = {0, 50000000}; /* looks at the target every 50 ms */
    fake_futex(&p->done, FUTEX_WAIT, d, &ts);
    if (__atomic_load_n(&p->done, __ATOMIC_SEQ_CST) != r && !alive(&c)) {
      rc = CUDA_ERROR_NOT_INITIALIZED;
      break;
    }
  }
  if (rc == CUDA_SUCCESS) rc = (CUresult)p->result;
  close_channel(&c);
  return rc;
}

static int zero(const void* p, size_t n) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != 0) return 0;
  return 1;
}

FAKE_API CUresult cuCheckpointProcessGetState(int pid, CUprocessState* state) {
  if (state == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct channel c;
  CUresult rc = open_channel(pid, &c);
  if (rc != CUDA_SUCCESS) return rc;
  *state = (CUprocessState)__atomic_load_n(&c.page->state, __ATOMIC_SEQ_CST);
  close_channel(&c);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int* tid) {
  if (tid == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct channel c;
  CUresult rc = open_channel(pid, &c);
  if (rc != CUDA_SUCCESS) return rc;
  *tid = __atomic_load_n(&c.page->tid, __ATOMIC_SEQ_CST);
  close_channel(&c);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs* args) {
  if (args != NULL && (args->reserved0 != 0 || !zero(args->reserved1, sizeof args->reserved1)))
    return CUDA_ERROR_INVALID_VALUE;
  return request(pid, FAKE_CKPT_LOCK, args != NULL ? args->timeoutMs : 0);
}

FAKE_API CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs* args) {
  if (args != NULL && !zero(args, sizeof *args)) return CUDA_ERROR_INVALID_VALUE;
  return request(pid, FAKE_CKPT_CHECKPOINT, 0);
}

/* The fake does not move a process to other GPUs: a GPU pair list is CUDA_ERROR_NOT_SUPPORTED. */
FAKE_API CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs* args) {
  if (args != NULL && (!zero(args->reserved, sizeof args->reserved) || args->reserved1 != 0))
    return CUDA_ERROR_INVALID_VALUE;
  if (args != NULL && (args->gpuPairs != NULL || args->gpuPairsCount != 0)) return CUDA_ERROR_NOT_SUPPORTED;
  return request(pid, FAKE_CKPT_RESTORE, 0);
}

FAKE_API CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs* args) {
  if (args != NULL && !zero(args, sizeof *args)) return CUDA_ERROR_INVALID_VALUE;
  return request(pid, FAKE_CKPT_UNLOCK, 0);
}
