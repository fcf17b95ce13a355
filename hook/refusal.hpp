// Why the hook refused a container, for the refusal counters (metrics/counter_file.hpp). Decided
// after the fact from the invocation, in the order the hook checks: the host-PID policy, the OCI
// state, the request, then the ledger. Only on the failure path: the start path pays nothing.
#pragma once

#include "core/error.hpp"
#include "hook/booking.hpp"
#include "metrics/counter_file.hpp"

namespace gpufrac::hook {

metrics::Refusal refusal_of(const Invocation& inv, const Error& e);

}  // namespace gpufrac::hook
