// Burstable memory for a Kubernetes claim (docs/architecture.md "Burstable memory"): the claim's
// opaque configuration for driver gpufrac.io, which the scheduler copies into
// status.allocation.devices.config, may carry
//   parameters: {memory-limit: "30Gi", on-limit: "wait", on-limit-timeout: "5"}
// for all of the claim's requests, or for those its `requests` list names. The scheduler counts the
// consumed capacity (the request); the limit is above it. Refused in one line naming the claim and
// the field: an unknown parameter, a limit that is not a quantity or is below the consumed memory,
// a limit on a MIG device or on a result of several devices of one request, a bad on-limit.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "k8s/claim.hpp"

namespace gpufrac::dra {

// Sets each share's booking.limit and booking.wait_ms from the claim's configuration.
Result<> apply_claim_params(const nlohmann::json& claim, const ClaimRef& ref, std::vector<ClaimShare>& shares);

}  // namespace gpufrac::dra
