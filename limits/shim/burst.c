/* Burstable memory in the shim (docs/architecture.md "Burstable memory", limits_abi.h): how far a
 * container may go past its request (the reclaimer's ceiling, while its beat is fresh), asking the
 * reclaimer for memory a borrower holds when the driver refuses an allocation within the request,
 * and waiting (gpufrac.io/on-limit: wait) for memory to free. Devices without a burst or wait line
 * never come here: their allocation path is what it was. */
#include <errno.h>
#include <time.h>

#include "gf_burst.h"

#define GF_RECLAIM_WAIT_MS 15000 /* how long an asker waits for the reclaimer's answer */
#define GF_RECLAIM_ASKS 3        /* requests per allocation */
#define GF_WAIT_STEP_MS 10       /* the pause between two tries of a waiting allocation */

static int g_log_lend, g_log_refuse, g_log_untold;

static uint32_t monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

uint64_t gf_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void gf_sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int gf_reclaimer_alive(void) {
  const struct gpufrac_region* r = gf_g.region;
  if (r == NULL) return 0;
  uint32_t beat = __atomic_load_n(&r->reclaimer_beat, __ATOMIC_ACQUIRE);
  return beat != 0 && (int32_t)(monotonic_ms() - beat) < GPUFRAC_RECLAIMER_BEAT_MS;
}

uint64_t gf_burst_room(int idx) {
  const struct gf_device_limit* d = &gf_g.cfg.devices[idx];
  if (d->request == 0) return d->limit;
  const struct gpufrac_region* r = gf_g.region;
  if (r == NULL || !gf_reclaimer_alive() || __atomic_load_n(&r->burst_device, __ATOMIC_ACQUIRE) != (uint8_t)idx) {
    return d->request; /* no reclaimer: nothing is lent */
  }
  uint64_t ceiling = __atomic_load_n(&r->burst_ceiling, __ATOMIC_ACQUIRE);
  if (ceiling > d->limit) ceiling = d->limit;
  return ceiling > d->request ? ceiling : d->request;
}

int gf_burst_admits(int idx, uint64_t in_use) {
  /* Within the request: no clock read, no look at the reclaimer's fields. */
  return GF_LIKELY(in_use <= gf_g.cfg.devices[idx].request) || in_use <= gf_burst_room(idx);
}

void gf_log_no_lend(const char* api, uint64_t n, int idx, uint64_t in_use) {
  const struct gf_device_limit* d = &gf_g.cfg.devices[idx];
  gf_log_once(&g_log_lend,
              "%s of %llu refused: it would take the container past its request %llu on %s (%llu in use, limit "
              "%llu), and the GPU has no memory to lend now",
              api, (unsigned long long)n, (unsigned long long)d->request, d->uuid, (unsigned long long)in_use,
              (unsigned long long)d->limit);
}

/* Asks the reclaimer for n bytes on device idx and waits for its answer; the answer, or 0 when
 * none came (the reclaimer stopped, or took too long). */
static int ask_reclaim(int idx, uint64_t n) {
  struct gpufrac_region* r = gf_g.region;
  __atomic_store_n(&r->reclaim_device, (uint8_t)idx, __ATOMIC_SEQ_CST);
  __atomic_store_n(&r->reclaim_bytes, n, __ATOMIC_SEQ_CST);
  uint32_t mine = __atomic_add_fetch(&r->reclaim_asked, 1, __ATOMIC_SEQ_CST);
  uint64_t deadline = gf_now_ms() + GF_RECLAIM_WAIT_MS;
  while (gf_now_ms() < deadline && gf_reclaimer_alive()) {
    uint32_t answered = __atomic_load_n(&r->reclaim_answered, __ATOMIC_ACQUIRE);
    if ((int32_t)(answered - mine) >= 0) return __atomic_load_n(&r->reclaim_answer, __ATOMIC_ACQUIRE);
    gf_sleep_ms(1);
  }
  return 0;
}

int gf_after_oom(int idx, uint64_t n, uint64_t in_use, const char* api, struct gf_oom_state* st) {
  if (idx < 0 || gf_g.region == NULL) return 0;
  const struct gf_device_limit* d = &gf_g.cfg.devices[idx];
  const uint64_t request = d->request != 0 ? d->request : d->limit;
  if (st->asks < GF_RECLAIM_ASKS && gf_reclaimer_alive() && in_use <= request) {
    st->asks++;
    int answer = ask_reclaim(idx, n);
    if (answer == GPUFRAC_RECLAIM_FREED || answer == GPUFRAC_RECLAIM_RETRY) return 1;
    if (answer == GPUFRAC_RECLAIM_REFUSED) {
      gf_log_once(&g_log_refuse,
                  "%s of %llu refused on %s: the GPU's memory is lent to containers past their requests, and "
                  "this node keeps loans (burst.reclaim: refuse); it fails until they free it",
                  api, (unsigned long long)n, d->uuid);
    }
    if (answer == GPUFRAC_RECLAIM_UNTOLD) {
      gf_log_once(&g_log_untold,
                  "%s of %llu refused on %s: this container shares its cgroup with another share of the GPU, so "
                  "the reclaimer cannot tell their processes apart: it takes no memory back for it, and neither "
                  "may borrow; give each container its own cgroup",
                  api, (unsigned long long)n, d->uuid);
    }
  }
  if (d->wait_ms == 0) return 0;
  if (st->deadline_ms == 0) st->deadline_ms = gf_now_ms() + d->wait_ms;
  if (gf_now_ms() >= st->deadline_ms) return 0;
  gf_sleep_ms(GF_WAIT_STEP_MS);
  return 1;
}
