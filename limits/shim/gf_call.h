/* GPU work inside a call (docs/architecture.md "Compute share", "Work inside a call"): a launch that
 * returns only once its kernel ran (CUDA_LAUNCH_BLOCKING=1), or one that blocked on a full queue,
 * spends the holder's GPU time inside the call, where no event shows it. Pure rules over the lease
 * (lease_call.c), shared by the gate and the unit tests. Internal. */
#ifndef GPUFRAC_SHIM_GF_CALL_H
#define GPUFRAC_SHIM_GF_CALL_H

#include <stdint.h>

#include "gf_arbiter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a holder announces when it begins waiting for its own work (gf_lease_busy): pending_ns of
 * launches in flight, plus, for a call that runs its work inside it, that call's expected duration
 * (call_ns as measured; busy_ms until measured, UINT64_MAX for no call); at most busy_ms. */
#define GF_NO_CALL UINT64_MAX
uint64_t gf_call_expect_ns(const struct gf_lease* l, uint64_t pending_ns, uint64_t call_ns);
/* After a launch call admitted at from_ns that returned at now_ns without announcing anything: a call
 * longer than idle_us hid GPU work (a full queue), so a waiter may have taken the holder for idle; when
 * the lease was taken over meanwhile, the call's time is this slot's debt (gf_lease_debt). 1 when
 * the call was that long. */
int gf_call_returned(struct gf_lease* l, uint64_t from_ns, uint64_t now_ns);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_CALL_H */
