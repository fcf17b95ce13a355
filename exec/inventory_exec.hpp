// The static front-ends' way to rediscover a real node whose inventory cache no longer matches it
// (nvml/inventory_origin.hpp) while nothing is booked: `<cli.path> info --refresh --json`, run as
// exec/cli_exec.hpp runs every helper, writes the cache; it is read back.
#pragma once

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac {

Result<Inventory> refresh_by_cli(const Config& cfg);

}  // namespace gpufrac
