// Backend selection. Programs call discover() when they must see the hardware now (gpufrac info,
// cdi generate); the container-start path uses inventory_for_allocation() (inventory_cache.hpp),
// which reads the cache written by `gpufrac info --refresh` so NVML stays off that path.
#pragma once

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac {

// Discovers with the configured backend and attaches device nodes from the host root.
//  - simulated: the machine file (config nvml.machine, or --machine);
//  - nvml: the real library;
//  - auto: simulated when a machine file is configured, else nvml.
Result<Inventory> discover(const Config& cfg);

}  // namespace gpufrac
