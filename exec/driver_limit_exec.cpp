#include "exec/driver_limit_exec.hpp"

#include <algorithm>

#include "core/enforcement/cgroup_v2.hpp"
#include "core/enforcement/enforcement.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "exec/cli_exec.hpp"

namespace gpufrac {

Result<bool> driver_limits_wanted(const std::vector<LedgerEntry>& bookings, const Inventory& inv, const Config& cfg) {
  if (!driver_limits_considered(inv, cfg)) return false;
  std::vector<LedgerEntry> unset;
  std::copy_if(bookings.begin(), bookings.end(), std::back_inserter(unset),
               [](const LedgerEntry& e) { return !e.driver_limit; });
  auto plan = plan_driver_limits(unset, inv, detect_cgroup_layout(cfg.cgroup_root), cfg, "");
  if (!plan) return std::unexpected(plan.error());
  return !plan->empty();
}

std::vector<std::string> driver_limit_set_argv(const Config& cfg, const LimitCall& c) {
  std::vector<std::string> argv{cfg.cli_path, "driver-limit", "set", c.claim ? "--claim" : "--container",
                                c.container_id};
  if (!c.instance.empty()) argv.insert(argv.end(), {"--instance", c.instance});
  argv.insert(argv.end(), {"--pid", text::cat(c.pid)});
  return argv;
}

Result<> run_driver_limit_set(const Config& cfg, const LimitCall& call) {
  auto out = run_cli(cfg, driver_limit_set_argv(cfg, call));
  if (!out) return std::unexpected(out.error());
  log::info("driver limit: " + out->substr(0, out->find('\n')));
  return {};
}

void clear_released_limits(const Config& cfg, const std::vector<LedgerEntry>& released) {
  if (std::none_of(released.begin(), released.end(), [](const LedgerEntry& e) { return e.driver_limit.has_value(); }))
    return;
  auto out = run_cli(cfg, {cfg.cli_path, "driver-limit", "clear"});
  if (!out) log::warn("driver limit: " + out.error().message + " (gpufrac gc clears it later)");
}

}  // namespace gpufrac
