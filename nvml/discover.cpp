#include "nvml/discover.hpp"

#include "core/fs.hpp"
#include "core/mig/mig_device.hpp"
#include "nvml/device_nodes.hpp"
#include "nvml/driver_discovery.hpp"
#include "nvml/inventory_origin.hpp"
#include "nvml/nvml_backend.hpp"

namespace gpufrac {

Result<Inventory> discover(const Config& cfg) {
  if (uses_simulated_machine(cfg)) return discover_simulated(cfg);
  auto files = read_host_driver_files(cfg.host_root);
  if (!files) return std::unexpected(files.error());
  auto inv = discover_nvml(cfg.nvml.library);
  if (!inv) return inv;
  // NVML answers compute instance profiles only for GPU instances that exist: keep what the cache
  // learned from earlier ones (a cache that cannot be read teaches nothing).
  if (fs::exists(cfg.inventory_cache_path()))
    if (auto cached = read_inventory_cache(cfg)) learn_compute_profiles(*inv, *cached);
  auto origin = current_origin(cfg);
  if (!origin) return std::unexpected(origin.error());
  inv->origin = std::move(*origin);
  attach_device_nodes(*inv, *files);
  if (auto r = attach_driver_files(cfg, *inv, true); !r) return std::unexpected(r.error());
  return inv;
}

}  // namespace gpufrac
