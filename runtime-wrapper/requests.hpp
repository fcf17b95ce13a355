// What a spec asks the wrapper for: a gpufrac annotation request (device key ""), and gpufrac CDI
// devices named in cdi.k8s.io/* annotations (the Kubernetes/containerd CDI convention: key
// cdi.k8s.io/<anything>, value a comma-separated list of fully qualified names). Only names of
// kind gpufrac.io/gpu are ours; other vendors' devices are left to their own runtime.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/request/env_request.hpp"
#include "core/request/request.hpp"

namespace gpufrac::wrapper {

inline constexpr const char* kCdiAnnotationPrefix = "cdi.k8s.io/";
inline constexpr const char* kGpufracCdiPrefix = "gpufrac.io/gpu=";

// One booking to make: the ledger's device key and the request.
struct WantedDevice {
  std::string device_key;
  Request request;
  bool operator==(const WantedDevice&) const = default;
};

// Kubernetes pod sandboxes (the pause container): containerd's CRI plugin and CRI-O give them the
// pod's annotations too, so they would book a share of their own. They are never prepared.
inline constexpr const char* kCriContainerType = "io.kubernetes.cri.container-type";    // containerd
inline constexpr const char* kCrioContainerType = "io.kubernetes.cri-o.ContainerType";  // CRI-O
bool is_pod_sandbox(const Annotations& annotations);

// The gpufrac CDI device names (fully qualified) in the cdi.k8s.io/* annotations, in key order,
// each once.
std::vector<std::string> gpufrac_cdi_devices(const Annotations& annotations);

// True when the annotations or the environment (GPUFRAC_* request variables) ask gpufrac for
// anything (a request, a refusal to report, or a CDI device of ours) and do not belong to a pod
// sandbox.
bool wants_gpufrac(const Annotations& annotations, bool aliases, const std::vector<std::string>& env = {});

// Parses the request of the annotations or the environment (errors name the annotation or the
// variable) without the inventory.
Result<std::vector<WantedDevice>> annotation_request(const Annotations& annotations, bool aliases,
                                                     const std::vector<std::string>& env = {});

// The bookings for the CDI devices: each name's members (a name may stand for several devices,
// e.g. gpufrac.io/gpu=all) with their device key gpufrac.io/gpu=<member>.
Result<std::vector<WantedDevice>> cdi_requests(const std::vector<std::string>& names, const Inventory& inventory);

}  // namespace gpufrac::wrapper
