// Composing with NVIDIA's container toolkit (docs/architecture.md "The driver's user space"): a spec
// may already carry NVIDIA's edits (its CDI devices resolved by the engine, its hooks, its driver
// mounts). gpufrac then leaves the driver to NVIDIA under driver.inject: auto, and in every mode
// refuses a GPU in the spec that gpufrac did not grant, so NVIDIA's devices cannot widen a share.
#pragma once

#include <vector>

#include "bundle/oci.hpp"
#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/plan/edits.hpp"

namespace gpufrac::bundle {

struct NvidiaEdits {
  bool driver = false;        // NVIDIA's hooks or its libcuda / libnvidia-ml mounts are in the spec
  bool ldcache_hook = false;  // one of NVIDIA's hooks rebuilds the loader cache
};

NvidiaEdits find_nvidia_edits(const BundleSpec& spec);

// Whether gpufrac mounts the driver's files into this container: never with driver.inject: never
// or an inventory without them; with auto, not when NVIDIA's edits are there.
bool injects_driver(const Config& cfg, const Inventory& inv, const NvidiaEdits& nvidia);

// GPU nodes (/dev/nvidia<N>, /dev/nvidia-caps/nvidia-cap<N>) in the spec's devices or mounts that
// are not among `granted`: refused with one line naming the node.
Result<> check_spec_gpu_nodes(const BundleSpec& spec, const std::vector<EditDeviceNode>& granted);

}  // namespace gpufrac::bundle
