#include "nvml/discover.hpp"

#include "nvml/device_nodes.hpp"
#include "nvml/driver_discovery.hpp"
#include "nvml/nvml_backend.hpp"

namespace gpufrac {

Result<Inventory> discover(const Config& cfg) {
  if (uses_simulated_machine(cfg)) return discover_simulated(cfg);
  auto files = read_host_driver_files(cfg.host_root);
  if (!files) return std::unexpected(files.error());
  auto inv = discover_nvml(cfg.nvml.library);
  if (!inv) return inv;
  attach_device_nodes(*inv, *files);
  if (auto r = attach_driver_files(cfg, *inv, true); !r) return std::unexpected(r.error());
  return inv;
}

}  // namespace gpufrac
