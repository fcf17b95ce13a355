// The container-start side of inventory: the cache written by `gpufrac info --refresh` and the
// simulated backend. Kept apart from the real NVML backend so the static gpufrac-hook never links
// dlopen: the hook reads the cache, or a simulated machine, and never NVML.
#pragma once

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac {

// True when the configured backend is the simulated one (or auto with a machine file).
bool uses_simulated_machine(const Config& cfg);
// The simulated machine with device nodes attached from the host root.
Result<Inventory> discover_simulated(const Config& cfg);

Result<> write_inventory_cache(const Config& cfg, const Inventory& inv);
Result<Inventory> read_inventory_cache(const Config& cfg);
// The cached inventory; a missing cache is discovered (and written) when the backend is
// simulated, and is an error naming `gpufrac info --refresh` for the real backend.
Result<Inventory> inventory_for_allocation(const Config& cfg);
// The same for readers (`gpufrac status`, `metrics`, `gc --dry-run`): never writes the cache.
Result<Inventory> inventory_for_reading(const Config& cfg);

}  // namespace gpufrac
