// Writing the node's CDI spec to cdi.output, as `gpufrac cdi generate` does with its defaults
// (kind gpufrac.io/gpu, the format from the file name): build from the inventory, validate, render,
// replace the file atomically (0644) together with the static preload file it mounts; a node with
// no device to offer gets no spec (a stale one is removed). Dynamic MIG calls this after every
// change of MIG instances, so runtimes never resolve a device that is gone.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac::cdi {

struct SpecWritten {
  std::string path;
  std::size_t devices = 0;            // 0: no spec (a stale one was removed)
  std::vector<std::string> warnings;  // devices left out, one line each
};

Result<SpecWritten> write_node_spec(const Inventory& inventory, const Config& config);

// What dynamic MIG tells after every change (nvml/mig_provision.hpp): write_node_spec, its error
// prefixed "CDI spec not refreshed: ".
InventoryListener spec_refresher(const Config& config);

}  // namespace gpufrac::cdi
