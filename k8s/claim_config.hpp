// A claim's opaque configuration for gpufrac.io (docs/architecture.md "Kubernetes DRA"): the scheduler
// copies the device class's and the claim's spec.devices.config into status.allocation.devices.config
// (class entries first, so the claim's win). An entry whose opaque.driver is gpufrac.io applies to
// the results of the requests it names (all when it names none); its parameters, each optional:
//   {"apiVersion": "gpufrac.io/v1", "kind": "ShareConfig",
//    "computeMode": "fair" | "strict" | "sm",                      (sm: "SM sharing")
//    "memoryLimit": "30Gi", "onLimit": "fail" | "wait", "onLimitTimeout": 5}   ("Burstable memory")
// computeMode sm makes the share an SM share: it needs a compute request (capacity requests
// compute: "30") and a GPU, not a MIG device. memoryLimit lets a share use memory above what it
// consumes (the scheduler counts the consumed capacity); never below it, never on a MIG device.
// Entries of other drivers are skipped. Every refusal is one line naming the claim and the field.
// Pure.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "k8s/claim.hpp"

namespace gpufrac::dra {

// Sets each share's compute mode, booking.limit and booking.wait_ms from the claim's configuration.
Result<> apply_claim_config(const nlohmann::json& claim, const ClaimRef& ref, std::vector<ClaimShare>& shares);

}  // namespace gpufrac::dra
