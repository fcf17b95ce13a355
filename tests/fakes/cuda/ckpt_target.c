/* The target's side of the checkpoint API (ckpt.h): its page, the driver's checkpoint thread that
 * serves the controllers' requests, and the gate its calls pass. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ckpt.h"
#include "drvlimit.h"
#include "fake_cuda.h"
#include "procname.h"

struct fake_ckpt_page* fake_ckpt;
uint32_t fake_ckpt_active;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

void fake_ckpt_wait(void) {
  for (;;) {
    __atomic_sub_fetch(&fake_ckpt_active, 1, __ATOMIC_SEQ_CST);
    uint32_t g;
    while ((g = __atomic_load_n(&fake_ckpt->gate, __ATOMIC_SEQ_CST)) != 0)
      fake_futex(&fake_ckpt->gate, FUTEX_WAIT, g, NULL);
    __atomic_add_fetch(&fake_ckpt_active, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&fake_ckpt->gate, __ATOMIC_SEQ_CST) == 0) return;
  }
}

static void open_gate(void) {
  __atomic_store_n(&fake_ckpt->gate, 0, __ATOMIC_SEQ_CST);
  fake_futex(&fake_ckpt->gate, FUTEX_WAKE, INT_MAX, NULL);
}

static void set_state(CUprocessState s) {
  __atomic_store_n(&fake_ckpt->state, (uint32_t)s, __ATOMIC_SEQ_CST);
}

/* Sleeps 100 us; 0 once the deadline (0: none) passed. */
static int before(uint64_t deadline) {
  if (deadline != 0 && fake_now_ns() >= deadline) return 0;
  struct timespec ts = {0, 100000};
  nanosleep(&ts, NULL);
  return 1;
}

/* Closes the gate, then waits until no call is inside it and the work already submitted on every
 * device is done; at the deadline the gate opens again and the process stays RUNNING. */
static CUresult lock(unsigned timeout_ms) {
  if (fake_ckpt->state != CU_PROCESS_STATE_RUNNING) return CUDA_ERROR_ILLEGAL_STATE;
  const uint64_t deadline = timeout_ms != 0 ? fake_now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
  __atomic_store_n(&fake_ckpt->gate, 1, __ATOMIC_SEQ_CST);
  int ok = 1;
  while (ok && __atomic_load_n(&fake_ckpt_active, __ATOMIC_SEQ_CST) != 0) ok = before(deadline);
  for (int d = 0; ok && d < fake_device_count; d++) {
    const uint64_t tail = fake_device_tail(d);
    while (ok && tail != 0 && fake_gpu_v(d) < tail) ok = before(deadline);
  }
  if (!ok) return open_gate(), CUDA_ERROR_TIMEOUT;
  set_state(CU_PROCESS_STATE_LOCKED);
  return CUDA_SUCCESS;
}

static CUresult checkpoint(void) {
  if (fake_ckpt->state != CU_PROCESS_STATE_LOCKED) return CUDA_ERROR_ILLEGAL_STATE;
  CUresult rc = fake_contents_out();
  if (rc != CUDA_SUCCESS) return rc;
  fake_limit_swap_out();
  set_state(CU_PROCESS_STATE_CHECKPOINTED);
  return CUDA_SUCCESS;
}

/* Refused for lack of memory: the process stays CHECKPOINTED; under
 * GPUFRAC_FAKE_CUDA_RESTORE_OOM=poison (driver 580.95.05, cuda-checkpoint #44) every later restore
 * returns CUDA_ERROR_OPERATING_SYSTEM. */
static CUresult restore(void) {
  if (fake_ckpt->state != CU_PROCESS_STATE_CHECKPOINTED) return CUDA_ERROR_ILLEGAL_STATE;
  if (fake_ckpt->poisoned) return CUDA_ERROR_OPERATING_SYSTEM;
  CUresult rc = fake_limit_swap_in();
  if (rc == CUDA_SUCCESS && (rc = fake_contents_in()) != CUDA_SUCCESS) fake_limit_swap_out();
  if (rc != CUDA_SUCCESS) {
    const char* mode = getenv("GPUFRAC_FAKE_CUDA_RESTORE_OOM");
    if (mode != NULL && strcmp(mode, "poison") == 0) fake_ckpt->poisoned = 1;
    return rc;
  }
  set_state(CU_PROCESS_STATE_LOCKED);
  return CUDA_SUCCESS;
}

static CUresult unlock(void) {
  if (fake_ckpt->state != CU_PROCESS_STATE_LOCKED) return CUDA_ERROR_ILLEGAL_STATE;
  set_state(CU_PROCESS_STATE_RUNNING);
  open_gate();
  return CUDA_SUCCESS;
}

static CUresult handle(uint32_t op, unsigned timeout_ms) {
  switch (op) {
    case FAKE_CKPT_LOCK:
      return lock(timeout_ms);
    case FAKE_CKPT_CHECKPOINT:
      return checkpoint();
    case FAKE_CKPT_RESTORE:
      return restore();
    case FAKE_CKPT_UNLOCK:
      return unlock();
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

static void* serve(void* arg) {
  (void)arg;
  struct fake_ckpt_page* p = fake_ckpt;
  __atomic_store_n(&p->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
  for (;;) {
    const uint32_t r = __atomic_load_n(&p->request, __ATOMIC_SEQ_CST);
    if (r == __atomic_load_n(&p->done, __ATOMIC_SEQ_CST)) {
      fake_futex(&p->request, FUTEX_WAIT, r, NULL);
      continue;
    }
    p->result = handle(p->op, p->timeout_ms);
    __atomic_store_n(&p->done, r, __ATOMIC_SEQ_CST);
    fake_futex(&p->done, FUTEX_WAKE, INT_MAX, NULL);
  }
  return NULL;
}

/* A forked child is no CUDA process of its own: its calls do not pass its parent's gate. */
static void forked(void) {
  fake_ckpt = NULL;
}

/* Writes the complete page under a temporary name and renames it into place. */
static struct fake_ckpt_page* publish(const char* state) {
  char dir[4096], path[4200], tmp[4300], name[FAKE_NAME_MAX];
  snprintf(dir, sizeof dir, "%s.checkpoint", state);
  mkdir(dir, 0755);
  chmod(dir, 0777); /* processes of other users and namespaces publish theirs */
  fake_self_name(state, name, sizeof name);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return NULL;
  fchmod(fd, 0666); /* a controller of another user writes its requests into it */
  void* m = ftruncate(fd, 4096) == 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  if (m == MAP_FAILED) return unlink(tmp), NULL;
  struct fake_ckpt_page* p = m;
  p->start = fake_start_time("self");
  p->state = CU_PROCESS_STATE_RUNNING;
  __atomic_store_n(&p->magic, FAKE_CKPT_MAGIC, __ATOMIC_SEQ_CST);
  if (rename(tmp, path) != 0) return unlink(tmp), munmap(m, 4096), NULL;
  return p;
}

static void init_once(void) {
  const char* state = getenv("GPUFRAC_FAKE_NVML_STATE");
  if (state == NULL || *state == '\0') return;
  struct fake_ckpt_page* p = publish(state);
  if (p == NULL) return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signal meant for the program */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t t;
  __atomic_store_n(&fake_ckpt, p, __ATOMIC_RELEASE);
  if (pthread_create(&t, &attr, serve, NULL) != 0) __atomic_store_n(&fake_ckpt, NULL, __ATOMIC_RELEASE);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_atfork(NULL, NULL, forked);
}

void fake_ckpt_init(void) {
  pthread_once(&g_once, init_once);
}
