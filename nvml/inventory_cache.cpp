#include "nvml/inventory_cache.hpp"

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/text.hpp"
#include "nvml/device_nodes.hpp"
#include "nvml/driver_discovery.hpp"
#include "nvml/inventory_origin.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {

namespace {

// A simulated host root may lack /proc/devices (e.g. `gpufrac info --machine` on a plain host):
// then the machine's own majors stand in, so specs still carry explicit numbers.
// The same holds for the MIG capability minors: the simulated driver's own table stands in.
void fill_simulated_defaults(HostDriverFiles& files, const SimulatedMachine& machine) {
  if (!files.nvidia_major) files.nvidia_major = machine.majors.nvidia;
  if (!files.uvm_major) files.uvm_major = machine.majors.nvidia_uvm;
  if (!files.caps_major) files.caps_major = machine.majors.nvidia_caps;
  if (files.mig_minors.empty()) files.mig_minors = parse_mig_minors(simulated_mig_minors(machine));
}

enum class Use { allocation, reading };

// A stale cache that is not refreshed: what changed, and what to run.
Error stale_refusal(const Config& cfg, const std::string& change, std::size_t booked) {
  const std::string why = booked == 0 ? "; it cannot be rediscovered here"
                                      : text::cat("; ", booked, booked == 1 ? " booking holds" : " bookings hold",
                                                  " devices from it, so it was not refreshed");
  return user_error(text::cat("the inventory cache ", cfg.inventory_cache_path(), " no longer matches this node (",
                              change, ")", why, ": run gpufrac info --refresh",
                              booked == 0 ? "" : " (once they are released, or now to take the node as it is)"))
      .error();
}

// The cache when it still matches the node; else, with nothing booked, the inventory discovered now
// (written for allocation).
Result<Inventory> checked_cache(const Config& cfg, const Rediscover& real, Use use) {
  auto cached = read_inventory_cache(cfg);
  if (!cached) return cached;
  auto now = current_origin(cfg);
  if (!now) return std::unexpected(now.error());
  const std::string change = origin_change(cached->origin, *now);
  if (change.empty()) return cached;
  auto ledger = Ledger(LedgerOptions::from(cfg)).read();
  if (!ledger) return std::unexpected(ledger.error());
  const bool simulated = uses_simulated_machine(cfg);
  if (!ledger->entries.empty() || (!simulated && !real))
    return std::unexpected(stale_refusal(cfg, change, ledger->entries.size()));
  auto inv = simulated ? discover_simulated(cfg) : real(cfg);
  if (!inv || use == Use::reading) return inv;
  if (auto r = write_inventory_cache(cfg, *inv); !r) return std::unexpected(r.error());
  return inv;
}

}  // namespace

bool uses_simulated_machine(const Config& cfg) {
  return cfg.nvml.backend == NvmlBackend::simulated ||
         (cfg.nvml.backend == NvmlBackend::auto_detect && !cfg.nvml.machine.empty());
}

Result<Inventory> discover_simulated(const Config& cfg) {
  auto files = read_host_driver_files(cfg.host_root);
  if (!files) return std::unexpected(files.error());
  auto machine = load_simulated_machine(cfg.nvml.machine);
  if (!machine) return std::unexpected(machine.error());
  fill_simulated_defaults(*files, *machine);
  Inventory inv = std::move(machine->inventory);
  auto origin = current_origin(cfg);
  if (!origin) return std::unexpected(origin.error());
  inv.origin = std::move(*origin);
  attach_device_nodes(inv, *files);
  if (auto r = attach_driver_files(cfg, inv, false); !r) return std::unexpected(r.error());
  return inv;
}

Result<> write_inventory_cache(const Config& cfg, const Inventory& inv) {
  if (auto r = fs::make_dirs(cfg.state_dir, 0755); !r) return r;
  auto r = fs::write_file_atomic(cfg.inventory_cache_path(), to_json(inv).dump(2) + "\n", 0644);
  return r ? r : std::unexpected(fs::state_dir_full(r.error(), cfg.state_dir));
}

Result<Inventory> read_inventory_cache(const Config& cfg) {
  auto text = fs::read_file(cfg.inventory_cache_path(), 64u << 20);
  if (!text) return std::unexpected(text.error());
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return internal_error(cfg.inventory_cache_path() + ": not JSON; run gpufrac info --refresh");
  return inventory_from_json(j);
}

Result<Inventory> inventory_for_reading(const Config& cfg, const Rediscover& real) {
  if (fs::exists(cfg.inventory_cache_path())) return checked_cache(cfg, real, Use::reading);
  if (!uses_simulated_machine(cfg))
    return internal_error("no inventory cache at " + cfg.inventory_cache_path() +
                          "; run gpufrac info --refresh (gpufrac-cdi-refresh.service does this at boot)");
  return discover_simulated(cfg);
}

Result<Inventory> inventory_for_allocation(const Config& cfg, const Rediscover& real) {
  if (fs::exists(cfg.inventory_cache_path())) return checked_cache(cfg, real, Use::allocation);
  if (!uses_simulated_machine(cfg)) return inventory_for_reading(cfg, real);
  auto inv = discover_simulated(cfg);
  if (!inv) return inv;
  if (auto r = write_inventory_cache(cfg, *inv); !r) return std::unexpected(r.error());
  return inv;
}

}  // namespace gpufrac
