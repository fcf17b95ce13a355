/* GPU work inside a call (gf_call.h): what a holder in such a call announces, and what a call that
 * turned out long charges. The lease's own charge (its start to its end, which comes after the call)
 * holds a call made while the lease stays held; only a takeover meanwhile leaves the rest as debt. */
#include "gf_call.h"

uint64_t gf_call_expect_ns(const struct gf_lease* l, uint64_t pending_ns, uint64_t call_ns) {
  uint64_t cap = (uint64_t)l->p.busy_ms * 1000000u;
  uint64_t own = call_ns == GF_NO_CALL ? 0 : call_ns != 0 ? call_ns : cap; /* not measured yet: the most */
  return pending_ns >= cap || own >= cap - pending_ns ? cap : pending_ns + own;
}

int gf_call_returned(struct gf_lease* l, uint64_t from_ns, uint64_t now_ns) {
  if ((int64_t)(now_ns - from_ns) <= (int64_t)l->p.idle_us * 1000) return 0;
  gf_lease_debt(l, from_ns);
  return 1;
}
