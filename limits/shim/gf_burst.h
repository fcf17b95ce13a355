/* Burstable memory in the shim (burst.c; limits_abi.h, docs/architecture.md "Burstable memory"):
 * how far a container may go past its request, asking the reclaimer for lent memory, and
 * gpufrac.io/on-limit: wait. Below the memory accounting (gf_charge.h), above gf_shim.h. Internal. */
#ifndef GPUFRAC_SHIM_GF_BURST_H
#define GPUFRAC_SHIM_GF_BURST_H

#include "gf_shim.h"

uint64_t gf_now_ms(void);
void gf_sleep_ms(unsigned ms);
/* Whether the host's reclaimer passed over the region within GPUFRAC_RECLAIMER_BEAT_MS. */
int gf_reclaimer_alive(void);
/* The most the container may hold on limited device idx now: its limit without a burst line; with
 * one, its request, or up to the reclaimer's ceiling while the reclaimer runs. */
uint64_t gf_burst_room(int idx);
/* Whether the container may hold in_use bytes on device idx (with a burst line). */
int gf_burst_admits(int idx, uint64_t in_use);
void gf_log_no_lend(const char* api, uint64_t n, int idx, uint64_t in_use);
/* After the driver refused n counted bytes on idx with CUDA_ERROR_OUT_OF_MEMORY while the container
 * holds in_use there: 1 to try the driver again (the reclaimer freed memory lent to a borrower, or
 * on-limit: wait has time left), 0 to fail. st starts zeroed for each allocation. */
struct gf_oom_state {
  unsigned asks;
  uint64_t deadline_ms;
};
int gf_after_oom(int idx, uint64_t n, uint64_t in_use, const char* api, struct gf_oom_state* st);

#endif /* GPUFRAC_SHIM_GF_BURST_H */
