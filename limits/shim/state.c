/* Process-wide state: the limit file and region loaded once on first use, this process's slot
 * claimed on its first counted allocation, and what a fork child forgets of them (fork.c calls it). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gf_lock.h"
#include "gf_proc.h"
#include "gf_shim.h"

struct gf_shim gf_g;
static int g_mode;  /* 0 until loaded; then enum gf_mode */
static int g_state; /* 0 not loaded, 1 loading, 2 loaded */
static struct gpufrac_slot* g_slot;
static int g_lock_fd = -1; /* this process's own descriptor of the region: its slot's lock (gf_lock.h) */
static uint64_t g_self;    /* gpufrac_owner(pid, start, 0); 0 until known */
static int g_proc_ok;      /* /proc/self/stat was readable: the thorough check can be trusted */
static int g_log_config, g_log_slot;
static pthread_mutex_t g_claim_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_text[GF_LIMIT_FILE_MAX + 1];

/* The container's limit file wins; GPUFRAC_LIMITS_FILE names one only where it is absent, so a
 * process inside a container cannot point the shim at a looser file. */
static const char* limit_path(void) {
  if (access(GPUFRAC_CONTAINER_LIMITS, F_OK) == 0 || errno != ENOENT) return GPUFRAC_CONTAINER_LIMITS;
  const char* env = secure_getenv(GPUFRAC_LIMITS_ENV);
  return env != NULL && env[0] != '\0' ? env : GPUFRAC_CONTAINER_LIMITS;
}

/* 1 loaded, 0 no such file, -1 unreadable or invalid (reason in err). */
static int load_limits(const char* path, char* err, size_t err_len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    return snprintf(err, err_len, "cannot read: %s", strerror(errno)), -1;
  }
  size_t len = 0;
  for (;;) {
    ssize_t n = read(fd, g_text + len, sizeof g_text - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || (len += (size_t)n) == sizeof g_text) break;
  }
  close(fd);
  if (len > GF_LIMIT_FILE_MAX) return snprintf(err, err_len, "larger than %d bytes", GF_LIMIT_FILE_MAX), -1;
  return gf_config_parse(g_text, len, &gf_g.cfg, err, err_len) == 0 ? 1 : -1;
}

static int load(void) {
  char err[512];
  snprintf(gf_g.limit_path, sizeof gf_g.limit_path, "%s", limit_path());
  int rc = load_limits(gf_g.limit_path, err, sizeof err);
  if (rc == 0) return GF_MODE_INERT;
  if (rc < 0) {
    gf_log_once(&g_log_config, "limit file %s: %s; device memory allocations are refused", gf_g.limit_path, err);
    return GF_MODE_REFUSE_ALL;
  }
  gf_g.region = gf_region_map(gf_g.cfg.region, err, sizeof err);
  if (gf_g.region == NULL) {
    gf_log_once(&g_log_config, "usage region %s: %s; allocations on limited devices are refused", gf_g.cfg.region, err);
  }
  return GF_MODE_ACTIVE;
}

int gf_mode(void) {
  int m = __atomic_load_n(&g_mode, __ATOMIC_ACQUIRE);
  if (GF_LIKELY(m != 0)) return m;
  int expected = 0;
  if (__atomic_compare_exchange_n(&g_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(&g_mode, load(), __ATOMIC_RELEASE);
    __atomic_store_n(&g_state, 2, __ATOMIC_RELEASE);
  }
  while ((m = __atomic_load_n(&g_mode, __ATOMIC_ACQUIRE)) == 0) sched_yield();
  return m;
}

uint64_t gf_self(void) {
  uint64_t self = __atomic_load_n(&g_self, __ATOMIC_ACQUIRE);
  if (GF_LIKELY(self != 0)) return self;
  struct gf_proc_stat st = {0, 0};
  int ok = gf_proc_stat_read("/proc/self/stat", &st) == 0;
  __atomic_store_n(&g_proc_ok, ok, __ATOMIC_RELAXED);
  self = gpufrac_owner((uint64_t)getpid(), ok ? st.start : 0, 0);
  __atomic_store_n(&g_self, self, __ATOMIC_RELEASE);
  return self;
}

/* The region opened again, read-write, as this process's own open file description: the lock
 * on its slot's byte lives as long as the description, which no other process shares (a fork
 * child closes its copy, an exec closes it: O_CLOEXEC). -1 when it cannot be opened or the kernel
 * has no OFD locks (a seccomp filter, an old kernel): the slot is then OWNED, judged by its pid. */
static int open_lock_fd(void) {
  int fd = open(gf_g.cfg.region, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  if (gf_slot_lock_held(fd, 0) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Reclaim with g_claim_mu held: calls on the one lock descriptor never overlap (gf_lock.h). */
static unsigned reclaim_held(enum gf_reclaim_check check) {
  if (g_lock_fd < 0) g_lock_fd = open_lock_fd(); /* a process that reports before it allocates */
  struct gpufrac_slot* s = __atomic_load_n(&g_slot, __ATOMIC_ACQUIRE);
  int own = s != NULL ? (int)(s - gf_g.region->slots) : -1;
  return gf_region_reclaim_locked(gf_g.region, gf_self(), check, "/proc", g_lock_fd, own);
}

static unsigned reclaim_thorough_held(void) {
  gf_self();
  return reclaim_held(__atomic_load_n(&g_proc_ok, __ATOMIC_RELAXED) ? GF_CHECK_BOTH : GF_CHECK_SIGNAL);
}

unsigned gf_reclaim_thorough(void) {
  pthread_mutex_lock(&g_claim_mu);
  unsigned n = reclaim_thorough_held();
  pthread_mutex_unlock(&g_claim_mu);
  return n;
}

/* Reporting reclaims with the thorough check (a pid reused by another process must not keep a
 * dead process's bytes on display), at most every GF_REPORT_RECLAIM_MS: it reads /proc once per
 * process of the container, and cuMemGetInfo may be called in loops. */
#define GF_REPORT_RECLAIM_MS 100
static uint64_t g_last_reclaim_ms;

static uint64_t coarse_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 1;
}

void gf_reclaim_for_report(void) {
  uint64_t now = coarse_ms(), last = __atomic_load_n(&g_last_reclaim_ms, __ATOMIC_RELAXED);
  if (last != 0 && now - last < GF_REPORT_RECLAIM_MS) return;
  __atomic_store_n(&g_last_reclaim_ms, now, __ATOMIC_RELAXED);
  gf_reclaim_thorough();
}

static struct gpufrac_slot* claim(void) {
  pthread_mutex_lock(&g_claim_mu);
  struct gpufrac_slot* s = __atomic_load_n(&g_slot, __ATOMIC_ACQUIRE);
  if (s == NULL) {
    reclaim_held(GF_CHECK_SIGNAL); /* unlocked bytes, pids gone: cheap, at start */
    uint64_t owned = gf_self() | (g_lock_fd >= 0 ? GPUFRAC_SLOT_LOCKED : GPUFRAC_SLOT_OWNED);
    int i = gf_slot_claim_locked(gf_g.region, owned, g_lock_fd);
    if (i < 0 && reclaim_thorough_held() > 0) i = gf_slot_claim_locked(gf_g.region, owned, g_lock_fd);
    if (i >= 0) {
      s = &gf_g.region->slots[i];
      __atomic_store_n(&g_slot, s, __ATOMIC_RELEASE);
    } else {
      gf_log_once(&g_log_slot,
                  "usage region %s: all %d process slots are taken; allocations on limited devices "
                  "are refused",
                  gf_g.cfg.region, GPUFRAC_MAX_SLOTS);
    }
  }
  pthread_mutex_unlock(&g_claim_mu);
  return s;
}

struct gpufrac_slot* gf_slot_if_claimed(void) {
  return __atomic_load_n(&g_slot, __ATOMIC_ACQUIRE);
}

struct gpufrac_slot* gf_slot(void) {
  struct gpufrac_slot* s = gf_slot_if_claimed();
  return GF_LIKELY(s != NULL) ? s : claim();
}

void gf_state_before_fork(void) {
  pthread_mutex_lock(&g_claim_mu);
}
void gf_state_after_fork_parent(void) {
  pthread_mutex_unlock(&g_claim_mu);
}

/* The child is a new process: new pid and start time, no slot. Its copy of the parent's lock
 * descriptor is closed: kept open, it would keep the parent's slot locked, alive, after the parent
 * died. The child opens its own at its claim. */
void gf_state_after_fork_child(void) {
  pthread_mutex_unlock(&g_claim_mu);
  if (g_lock_fd >= 0) close(g_lock_fd);
  g_lock_fd = -1;
  if (g_mode == 0) g_state = 0; /* a thread that was loading the configuration is gone */
  g_slot = NULL;
  g_self = 0;
  g_log_slot = 0;
  g_last_reclaim_ms = 0;
}
