#include "exec/inventory_exec.hpp"

#include "core/log.hpp"
#include "exec/cli_exec.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac {

Result<Inventory> refresh_by_cli(const Config& cfg) {
  if (auto out = run_cli(cfg, {cfg.cli_path, "info", "--refresh", "--json"}); !out)
    return std::unexpected(out.error().wrap("refreshing the inventory cache"));
  log::info("the inventory cache no longer matched the node and nothing was booked: refreshed it");
  return read_inventory_cache(cfg);
}

}  // namespace gpufrac
