#include "core/enforcement/enforcement.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace gpufrac {

namespace {

bool simulated_backend(const NvmlConfig& n) {
  return n.backend == NvmlBackend::simulated || (n.backend == NvmlBackend::auto_detect && !n.machine.empty());
}

// Why the driver cannot hold this GPU's shares ("" when it can).
std::string driver_obstacle(const Gpu& g, const Inventory& inv, CgroupLayout layout, const Config& cfg) {
  if (!g.memory_limits)
    return text::cat("driver ", inv.driver_version, " has no per-cgroup memory limits (r", kMemoryLimitsDriverMajor,
                     "+)");
  if (layout != CgroupLayout::v2)
    return text::cat("the node uses ", to_string(layout), "; the driver limits cgroup v2 only");
  if (simulated_backend(cfg.nvml))
    return "the simulated backend has no driver to set limits (nvml.backend: nvml sets them)";
  return "";
}

}  // namespace

const char* to_string(Holder h) {
  switch (h) {
    case Holder::driver:
      return "driver";
    case Holder::mig:
      return "mig";
    case Holder::refused:
      return "refused";
    case Holder::shim:
      break;
  }
  return "shim";
}

GpuEnforcement gpu_enforcement(const Gpu& g, const Inventory& inv, CgroupLayout layout, const Config& cfg) {
  if (g.mig_enabled) return {Holder::mig, "MIG mode: its instances are partitioned in hardware"};
  if (cfg.enforcement == Enforcement::shim) return {Holder::shim, "enforcement: shim"};
  std::string obstacle = driver_obstacle(g, inv, layout, cfg);
  if (obstacle.empty())
    return {Holder::driver, text::cat("driver ", inv.driver_version, ", ", to_string(layout), ", and the shim")};
  return {cfg.enforcement == Enforcement::driver ? Holder::refused : Holder::shim, std::move(obstacle)};
}

std::uint64_t guaranteed_bytes(std::uint64_t bytes, double overcommit) {
  if (overcommit <= 1.0) return bytes;
  return static_cast<std::uint64_t>(static_cast<long double>(bytes) / static_cast<long double>(overcommit));
}

Holder share_holder(const LedgerEntry& e) {
  return e.driver_limit ? Holder::driver : e.mig ? Holder::mig : Holder::shim;
}

bool is_share(const LedgerEntry& e) {
  return !e.mig && !e.exclusive;
}

Result<std::vector<PlannedLimit>> plan_driver_limits(const std::vector<LedgerEntry>& bookings, const Inventory& inv,
                                                     CgroupLayout layout, const Config& cfg,
                                                     const std::string& cgroup) {
  std::vector<PlannedLimit> out;
  for (const auto& e : bookings) {
    const Gpu* g = inv.gpu_by_uuid(e.gpu_uuid);
    if (!is_share(e) || !g) continue;
    const GpuEnforcement how = gpu_enforcement(*g, inv, layout, cfg);
    if (how.holder == Holder::refused)
      return user_error(text::cat("enforcement: driver: GPU ", g->index, " cannot hold the share of ", e.container_id,
                                  " with the driver: ", how.why,
                                  "; set enforcement: auto to let the shim hold it on this node"));
    if (how.holder != Holder::driver) continue;
    out.push_back(PlannedLimit{e.device_key, e.gpu_uuid, g->index,
                               DriverLimit{cgroup, guaranteed_bytes(e.bytes, cfg.allocation.overcommit), e.limit()}});
  }
  return out;
}

bool driver_limits_considered(const Inventory& inv, const Config& cfg) {
  if (cfg.enforcement != Enforcement::auto_detect) return cfg.enforcement == Enforcement::driver;
  return std::any_of(inv.gpus.begin(), inv.gpus.end(), [](const Gpu& g) { return g.memory_limits && !g.mig_enabled; });
}

}  // namespace gpufrac
