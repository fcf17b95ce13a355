// A ResourceClaim as NodePrepareResources reads it (GET .../resourceclaims/{name}): checked against
// the kubelet's Claim (uid), allocated, and turned into one booking per result of driver
// gpufrac.io on this node's pool. Every refusal is one line naming the claim and the field.
// Pure: the daemon fetches the JSON and books what this returns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/request/request.hpp"

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
  std::string request;       // results[].request, subrequest suffix removed ("main/sub" -> "main")
  std::string device;        // results[].device, a name from dra_devices()
  std::string share_id;      // results[].shareID ("" for a device allocated whole)
  std::uint64_t bytes = 0;   // what the share holds of the device's memory
  Request booking;           // what the ledger books: pinned to the device (and placement)
  bool dynamic_mig = false;  // a dynamic-MIG profile device: the provisioner may create it
  // The ledger's device key for this share: "<device>" or "<device>/<shareID>".
  std::string device_key() const { return share_id.empty() ? device : device + "/" + share_id; }
};

// The claim's results for gpufrac.io in pool `node`; refuses a claim whose uid differs from the
// kubelet's, one without status.allocation, a result naming another pool or an unknown device, a
// consumed memory beyond the device, a consumed fraction outside 1 to 1M, a consumed compute that is
// not a percent (or on a MIG device), more than 32 results. Results of other drivers are skipped. A
// share books the larger of its consumed memory and its consumed fraction of the GPU's memory
// (fraction_bytes, as gpufrac.io/fraction books it); a consumed compute above 0 is the booking's
// gpufrac.io/compute, 0 or none leaves it to the default share (allocation.compute).
Result<std::vector<ClaimShare>> claim_shares(const nlohmann::json& claim, const ClaimRef& ref, const std::string& node,
                                             const Inventory& inventory, const MigConfig& mig = {});

// Whether the answer to a GET of a prepared claim says it is gone: 404, or 200 with a claim of
// another uid (deleted and made again). Any other answer (an error status, a body cut short, of the
// wrong types or without metadata.uid) says nothing, and the claim stays prepared.
bool claim_gone(int status, const nlohmann::json& body, const std::string& uid);

}  // namespace gpufrac::dra
