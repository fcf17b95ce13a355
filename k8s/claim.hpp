// A ResourceClaim as NodePrepareResources reads it (GET .../resourceclaims/{name}): checked against
// the kubelet's Claim (uid), allocated, and turned into one booking per result of driver
// gpufrac.io on this node's pool. Every refusal is one line naming the claim and the field.
// Pure: the daemon fetches the JSON and books what this returns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/inventory.hpp"
#include "core/request.hpp"

namespace gpufrac::dra {

// What the kubelet names (kubelet dra/v1 Claim).
struct ClaimRef {
  std::string ns;
  std::string name;
  std::string uid;
  std::string describe() const { return ns + "/" + name + " (uid " + uid + ")"; }
};

// One allocation result of gpufrac.io, resolved against the inventory.
struct ClaimShare {
  std::string request;   // results[].request, subrequest suffix removed ("main/sub" -> "main")
  std::string device;    // results[].device, a name from dra_devices()
  std::string share_id;  // results[].shareID ("" for a device allocated whole)
  std::uint64_t bytes = 0;
  Request booking;           // what the ledger books: pinned to the device (and placement)
  bool dynamic_mig = false;  // a dynamic-MIG profile device: the provisioner may create it
  // The ledger's device key for this share: "<device>" or "<device>/<shareID>".
  std::string device_key() const { return share_id.empty() ? device : device + "/" + share_id; }
};

// The claim's results for gpufrac.io in pool `node`; refuses a claim whose uid differs from the
// kubelet's, one without status.allocation, a result naming another pool or an unknown device, a
// consumed memory beyond the device, a consumed compute that is not a percent (or on a MIG device),
// more than 32 results. Results of other drivers are skipped. A consumed compute above 0 is the
// booking's gpufrac.io/compute; 0 or none leaves it to the default share (allocation.compute).
Result<std::vector<ClaimShare>> claim_shares(const nlohmann::json& claim, const ClaimRef& ref, const std::string& node,
                                             const Inventory& inventory, const MigConfig& mig = {});

}  // namespace gpufrac::dra
