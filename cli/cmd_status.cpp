// `gpufrac status [--json]`: every GPU and MIG instance with its total, reserved and free memory,
// and each booking on it (container, bytes, request, pid, state, age, and live usage from the
// container's accounting region).
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/status_model.hpp"
#include "core/ledger.hpp"
#include "core/plan.hpp"
#include "core/process.hpp"
#include "limits/host/region_file.hpp"
#include "nvml/discover.hpp"

namespace gpufrac::cli {

namespace {

std::string share_state(const LedgerEntry& e, const Config& cfg, std::int64_t now) {
  if (e.pending())
    return now - e.created > static_cast<std::int64_t>(cfg.allocation.pending_timeout_s) ? "pending (expired)"
                                                                                         : "pending";
  Liveness l = process_liveness(cfg.proc_root, e.pid, e.pid_start);
  return l == Liveness::alive || l == Liveness::unknown ? "running" : to_string(l);
}

// Live usage from each container's accounting region (what its processes hold now, summed over
// live slots); nullopt when the container has no region (e.g. a pending booking).
UsageOf live_usage(const Config& cfg) {
  auto cache = std::make_shared<std::map<std::string, std::optional<limits::RegionUsage>>>();
  return [cache, &cfg](const LedgerEntry& e) -> std::optional<std::uint64_t> {
    auto [it, fresh] = cache->try_emplace(e.container_id);
    if (fresh) {
      auto usage = limits::read_region_usage(container_files(cfg, e.container_id).usage, cfg.proc_root);
      if (usage) it->second = std::move(*usage);
    }
    if (!it->second) return std::nullopt;
    for (const auto& d : it->second->devices)
      if (d.uuid == e.device_uuid) return d.used;
    return std::nullopt;
  };
}

int run_status(Context& ctx, bool json) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto inv = inventory_for_allocation(*cfg);
  if (!inv) return ctx.fail(inv.error());
  auto ledger = Ledger(LedgerOptions::from(*cfg)).read();
  if (!ledger) return ctx.fail(ledger.error());
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  auto report = build_status(
      *inv, *ledger, cfg->allocation, now, [&](const LedgerEntry& e) { return share_state(e, *cfg, now); },
      live_usage(*cfg));
  std::string out = json ? status_json(report).dump(2) + "\n" : render_status(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void add_status_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("status", "Show bookings: reserved and free memory per GPU and MIG instance");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([&ctx, json] { ctx.exit_code = run_status(ctx, *json); });
}

}  // namespace gpufrac::cli
