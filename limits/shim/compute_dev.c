/* The arbitrated devices of this process (docs/architecture.md "Compute share"): whether any device
 * is arbitrated at all (the inert fast path), each device's arbiter mapped on first use, and the
 * states a device leaves gating for: not arbitrated (an unusable arbiter, a slot gone, a lease file
 * cut short under it: said once) and bypassing (waited past its bound: said once, reported in the
 * container's usage region). */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gf_compute.h"

int gf_compute_flag;
static struct gf_compute_dev g_dev[GPUFRAC_MAX_DEVICES];
static pthread_mutex_t g_setup_mu = PTHREAD_MUTEX_INITIALIZER;

int gf_compute_load(void) {
  int on = 0;
  if (gf_mode() == GF_MODE_ACTIVE)
    for (unsigned i = 0; i < gf_g.cfg.device_count; i++) on |= gf_compute_arbitrated(&gf_g.cfg.devices[i]);
  __atomic_store_n(&gf_compute_flag, on ? GF_COMPUTE_ON : GF_COMPUTE_OFF, __ATOMIC_RELEASE);
  return on ? GF_COMPUTE_ON : GF_COMPUTE_OFF;
}

/* <directory of the region>/compute/<uuid>: GPUFRAC_CONTAINER_COMPUTE in a container. */
static void arbiter_path(char* out, size_t len, const char* uuid, const char* suffix) {
  const char* region = gf_g.cfg.region;
  const char* slash = strrchr(region, '/');
  int dir = slash != NULL ? (int)(slash - region) : 0;
  snprintf(out, len, "%.*s/compute/%s%s", dir, region, uuid, suffix);
}

/* This container's own lane (read-write) and the lanes directory beside the lease file: its bind
 * <uuid>.lane in a container; outside one (the host's own tests and benches), <uuid>.lanes/<key> of
 * the slot its token names. */
static int map_lane(struct gf_compute_dev* d, const struct gf_device_limit* dl, char* err, size_t err_len) {
  char lane[GF_PATH_MAX + 136], lanes[GF_PATH_MAX + 136];
  arbiter_path(lane, sizeof lane, dl->uuid, GPUFRAC_ARBITER_LANE_SUFFIX);
  arbiter_path(lanes, sizeof lanes, dl->uuid, GPUFRAC_ARBITER_LANES_SUFFIX);
  if (gf_arbiter_map_lane(lane, lanes, &d->map, err, err_len) == 0) return 0;
  if (errno != ENOENT) return -1;
  int i = gf_arbiter_find_token(d->map.slots, dl->compute_token);
  if (i < 0) { /* as gf_lease_init says it */
    snprintf(err, err_len, "no slot holds token %016llx; accepted: the slot the host set up for this container",
             (unsigned long long)dl->compute_token);
    return -1;
  }
  char key[GPUFRAC_ARBITER_KEY], own[GF_PATH_MAX + 136 + GPUFRAC_ARBITER_KEY];
  memcpy(key, (const void*)d->map.slots->slots[i].key, sizeof key);
  key[sizeof key - 1] = '\0';
  if (key[0] == '\0' || strchr(key, '/') != NULL) return -1;
  snprintf(own, sizeof own, "%s/%s", lanes, key);
  return gf_arbiter_map_lane(own, lanes, &d->map, err, err_len);
}

/* gf_lease's join: maps the lease file this process could not open before (a tenant had changed its
 * mode; the host puts it back at the next booking and at gc). */
static int join_lease(struct gf_lease* l) {
  struct gf_compute_dev* d = (struct gf_compute_dev*)((char*)l - offsetof(struct gf_compute_dev, lease));
  char lease[GF_PATH_MAX + 128], err[GF_PATH_MAX + 512];
  arbiter_path(lease, sizeof lease, gf_g.cfg.devices[d->index].uuid, "");
  if (gf_arbiter_map_lease(lease, &d->map, err, sizeof err) != 0) return -1;
  __atomic_store_n(&l->arb, d->map.lease, __ATOMIC_RELEASE);
  return 0;
}

/* The lease file's mode keeps this process out (a tenant chmod-ed it; another uid than the one that
 * could open it): it does not run free. With the slots file alone it knows its slot and weight, so it
 * waits its bound at its first launch as for a lease that never comes, then runs ungated (reported in
 * its usage region, as a bypass) and tries to join at most every lease until the host repaired the
 * mode. 0: arbitrated that way; -1: the slots file is unusable too. */
static int open_unjoined(struct gf_compute_dev* d, const struct gf_device_limit* dl, const char* lease,
                         const char* slots, const char* why) {
  char err[GF_PATH_MAX + 512];
  if (gf_arbiter_map_slots(slots, &d->map, err, sizeof err) != 0) return -1;
  if (map_lane(d, dl, err, sizeof err) != 0) {
    gf_arbiter_unmap(&d->map);
    return -1;
  }
  if (gf_lease_init(&d->lease, &d->map, dl->compute_token, (uint32_t)getpid(), err, sizeof err) != 0) {
    gf_arbiter_unmap(&d->map);
    return -1;
  }
  d->lease.join = join_lease;
  gf_log_once(&d->logged,
              "compute arbiter %s; launches on %s wait their turn (at most %llu ms), then run unarbitrated until "
              "this process can open %s read-write",
              why, dl->uuid, (unsigned long long)(gf_lease_bound_ns(&d->lease) / 1000000), lease);
  return 0;
}

/* 0: arbitrated; -1: not (no compute share smaller than the GPU, or unusable: said once). */
static int open_arbiter(struct gf_compute_dev* d, const struct gf_device_limit* dl) {
  char lease[GF_PATH_MAX + 128], slots[GF_PATH_MAX + 136], err[GF_PATH_MAX + 512];
  if (!gf_compute_arbitrated(dl)) return -1;
  if (dl->compute_token == 0) {
    gf_log_once(&d->logged,
                "limit file %s: compute share on %s without an arbiter line; launches on %s are not "
                "arbitrated",
                gf_g.limit_path, dl->uuid, dl->uuid);
    return -1;
  }
  arbiter_path(lease, sizeof lease, dl->uuid, "");
  arbiter_path(slots, sizeof slots, dl->uuid, GPUFRAC_ARBITER_SLOTS_SUFFIX);
  if (gf_arbiter_map(lease, slots, &d->map, err, sizeof err) == 0) {
    if (map_lane(d, dl, err, sizeof err) == 0 &&
        gf_lease_init(&d->lease, &d->map, dl->compute_token, (uint32_t)getpid(), err, sizeof err) == 0)
      return 0;
    gf_arbiter_unmap(&d->map);
    gf_log_once(&d->logged, "compute arbiter %s: %s; launches on %s are not arbitrated", lease, err, dl->uuid);
    return -1;
  }
  if ((errno == EACCES || errno == EPERM) && open_unjoined(d, dl, lease, slots, err) == 0) return 0;
  gf_log_once(&d->logged, "compute arbiter %s; launches on %s are not arbitrated", err, dl->uuid);
  return -1;
}

/* Where a tenant that writes the lease file cannot erase it: this process's slot of the container's
 * own usage region. */
static void report_bypass(const struct gf_compute_dev* d) {
  struct gpufrac_slot* s = gf_g.region != NULL ? gf_slot() : NULL;
  if (s == NULL) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  __atomic_fetch_or(&s->compute_bypassed, 1u << d->index, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->compute_bypassed_s, (uint32_t)ts.tv_sec, __ATOMIC_SEQ_CST);
}

/* A tenant that truncates the lease file (its bind is read-write) would make this process's next
 * touch of the mapping a SIGBUS. The handler takes such a fault over: the mapping is replaced by
 * private zero pages (the access then succeeds), the device stops being arbitrated (said at the next
 * launch) and the fault is reported like a bypass. Any other SIGBUS goes to the handler that was
 * there before, or kills as the default does. */
static struct sigaction g_old_bus;
static int g_bus_installed; /* under g_setup_mu */

static void on_sigbus(int sig, siginfo_t* si, void* uc) {
  for (int i = 0; i < GPUFRAC_MAX_DEVICES; i++) {
    struct gf_compute_dev* d = &g_dev[i];
    char* lo = (char*)d->map.lease;
    size_t len = sizeof *d->map.lease;
    if (lo == NULL || (char*)si->si_addr < lo || (char*)si->si_addr >= lo + len) {
      lo = (char*)d->map.own; /* its own lane, cut short by a process of its own container */
      len = sizeof *d->map.own;
      if (lo == NULL || (char*)si->si_addr < lo || (char*)si->si_addr >= lo + len) continue;
    }
    mmap(lo, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    __atomic_store_n(&d->shrunk, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&d->state, GF_DEV_PASS, __ATOMIC_SEQ_CST);
    return;
  }
  if (g_old_bus.sa_flags & SA_SIGINFO) {
    g_old_bus.sa_sigaction(sig, si, uc);
  } else if (g_old_bus.sa_handler != SIG_DFL && g_old_bus.sa_handler != SIG_IGN) {
    g_old_bus.sa_handler(sig);
  } else {
    signal(SIGBUS, SIG_DFL); /* the faulting access runs again and takes the default action */
  }
}

static void install_sigbus(void) {
  if (g_bus_installed) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  g_bus_installed = sigaction(SIGBUS, &sa, &g_old_bus) == 0;
}

/* A device whose lease file was cut short under it (on_sigbus): said once, reported. */
static void said_shrunk(struct gf_compute_dev* d) {
  int one = 1;
  if (!__atomic_compare_exchange_n(&d->shrunk, &one, 2, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return;
  report_bypass(d);
  const char* uuid = gf_g.cfg.devices[d->index].uuid;
  gf_log_once(&d->logged, "compute arbiter of %s: its lease file was cut short; launches on %s are not arbitrated",
              uuid, uuid);
}

/* NVIDIA's driver runs every launch's kernel inside the call when CUDA_LAUNCH_BLOCKING is 1 (read at
 * cuInit, which came before this process's first launch). */
static int launch_blocking(void) {
  const char* v = getenv("CUDA_LAUNCH_BLOCKING");
  return v != NULL && strcmp(v, "1") == 0;
}

static int setup(unsigned idx) {
  struct gf_compute_dev* d = &g_dev[idx];
  pthread_mutex_lock(&g_setup_mu);
  int st = __atomic_load_n(&d->state, __ATOMIC_ACQUIRE);
  if (st == GF_DEV_UNSET) {
    d->index = idx;
    d->blocking = launch_blocking();
    st = open_arbiter(d, &gf_g.cfg.devices[idx]) == 0 ? GF_DEV_GATED : GF_DEV_PASS;
    if (st == GF_DEV_GATED) install_sigbus();
    __atomic_store_n(&d->state, st, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_setup_mu);
  return st;
}

struct gf_compute_dev* gf_compute_device(void) {
  CUresult err;
  int idx = gf_current_index(&err);
  if (idx < 0 || idx >= (int)gf_g.cfg.device_count) return NULL;
  struct gf_compute_dev* d = &g_dev[idx];
  int st = __atomic_load_n(&d->state, __ATOMIC_ACQUIRE);
  if (GF_LIKELY(st == GF_DEV_GATED || st == GF_DEV_BYPASS)) return d;
  if (st == GF_DEV_UNSET) st = setup((unsigned)idx);
  if (GF_UNLIKELY(__atomic_load_n(&d->shrunk, __ATOMIC_RELAXED) == 1)) said_shrunk(d);
  return st == GF_DEV_GATED || st == GF_DEV_BYPASS ? d : NULL;
}

void gf_compute_bypass(struct gf_compute_dev* d) {
  uint64_t bound = gf_lease_bound_ns(&d->lease);
  __atomic_store_n(&d->retry_ns, gf_now_ns() + (uint64_t)d->lease.p.heartbeat_us * 1000, __ATOMIC_RELAXED);
  __atomic_store_n(&d->state, GF_DEV_BYPASS, __ATOMIC_RELEASE);
  report_bypass(d);
  gf_log_once(&d->logged_bypass,
              "compute arbiter of %s: no lease within %llu ms (the bound for this share); launches on %s run "
              "unarbitrated until the arbiter hands this container the lease again",
              gf_g.cfg.devices[d->index].uuid, (unsigned long long)(bound / 1000000), gf_g.cfg.devices[d->index].uuid);
}

void gf_compute_disable(struct gf_compute_dev* d) {
  gf_lease_drop(&d->lease);
  __atomic_store_n(&d->state, GF_DEV_PASS, __ATOMIC_RELEASE);
  const char* uuid = gf_g.cfg.devices[d->index].uuid;
  gf_log_once(&d->logged, "compute arbiter of %s: this container's slot is gone; launches on %s are not arbitrated",
              uuid, uuid);
}

/* The child has no lease and no launches of its own yet; it maps the arbiters again on use. */
void gf_compute_after_fork(void) {
  pthread_mutex_init(&g_setup_mu, NULL);
  for (int i = 0; i < GPUFRAC_MAX_DEVICES; i++) {
    struct gf_compute_dev* d = &g_dev[i];
    if (d->state == GF_DEV_UNSET) continue;
    gf_arbiter_unmap(&d->map); /* the SIGBUS handler stays: it finds no mapping of the child's */
    memset(d, 0, sizeof *d);   /* zeroed mutexes are initialised ones (glibc) */
  }
  gf_capture_after_fork();
}
