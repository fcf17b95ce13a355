// Keeps this node's ResourceSlices on the API server equal to what the inventory says
// (k8s/resource_slices.hpp), the way the Kubernetes publisher does it: list the driver's slices of
// the node, match them to the wanted ones by their index prefix, update what differs (PUT with the
// resourceVersion), create what is missing, delete the rest (with uid and resourceVersion
// preconditions); the pool generation goes up by one whenever anything changes. Run at start and
// every resync interval, so slices the kubelet wipes at its start come back, and driver, inventory
// or MIG changes are published.
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "k8s/api_client.hpp"
#include "k8s/resource_slices.hpp"

namespace gpufrac::dra {

struct PublishReport {
  int created = 0, updated = 0, deleted = 0;
  bool changed() const { return created + updated + deleted > 0; }
};

// The LIST of the node's slices (driver gpufrac.io): the first call of every pass, and the start check.
std::string slice_list_path(const std::string& node);

// One reconcile pass. `options.generation` is ignored: it follows the slices found.
Result<PublishReport> publish_slices(const ApiClient& api, const Config& cfg, SliceOptions options);

}  // namespace gpufrac::dra
