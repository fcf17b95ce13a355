// The container-start side of inventory: the cache written by `gpufrac info --refresh` and the
// simulated backend. Kept apart from the real NVML backend so the static gpufrac-hook never links
// dlopen: the hook reads the cache, or a simulated machine, and never NVML.
#pragma once

#include <functional>

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
// How a program rediscovers a real node whose cache no longer matches it (nvml/inventory_origin.hpp):
// the CLI discovers with NVML, the static front-ends run `<cli.path> info --refresh`
// (exec/inventory_exec.hpp). A simulated machine is rediscovered here, for every program.
using Rediscover = std::function<Result<Inventory>(const Config&)>;

// The cached inventory. A missing cache is discovered (and written) when the backend is simulated,
// and is an error naming `gpufrac info --refresh` for the real backend. A cache whose origin no
// longer matches the node is refreshed (rediscovered and written) when the ledger holds no
// booking, and else refused in one line saying what changed and `gpufrac info --refresh`; on a real
// node without `real` it is refused either way.
Result<Inventory> inventory_for_allocation(const Config& cfg, const Rediscover& real = {});
// The same for readers (`gpufrac status`, `metrics`, `gc --dry-run`): never writes the cache (a
// stale one with nothing booked is answered with the inventory discovered now).
Result<Inventory> inventory_for_reading(const Config& cfg, const Rediscover& real = {});

}  // namespace gpufrac
