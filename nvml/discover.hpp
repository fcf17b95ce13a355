// Backend selection and the inventory cache. Programs call discover() when they must see the
// hardware now (gpufrac info, cdi generate) and inventory_for_allocation() on the container-start
// path, which reads the cache written by `gpufrac info --refresh` so NVML stays off that path.
#pragma once

#include "core/config.hpp"
#include "core/error.hpp"
#include "nvml/inventory.hpp"

namespace gpufrac {

// Discovers with the configured backend and attaches device nodes from the host root.
//  - simulated: the machine file (config nvml.machine, or --machine);
//  - nvml: the real library;
//  - auto: simulated when a machine file is configured, else nvml.
Result<Inventory> discover(const Config& cfg);

Result<> write_inventory_cache(const Config& cfg, const Inventory& inv);
// The cached inventory; a missing cache is discovered (and written) when the backend is
// simulated, and is an error naming `gpufrac info --refresh` for the real backend.
Result<Inventory> inventory_for_allocation(const Config& cfg);
Result<Inventory> read_inventory_cache(const Config& cfg);

}  // namespace gpufrac
