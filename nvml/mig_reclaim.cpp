#include "nvml/mig_reclaim.hpp"

#include <algorithm>

#include "core/allocator/allocator.hpp"
#include "core/ledger/ledger.hpp"
#include "core/mig/mig_plan.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"
#include "nvml/mig_made.hpp"
#include "nvml/mig_steps.hpp"

namespace gpufrac {

namespace {

// GPU instances whose every MIG device is recorded idle past the timeout; their records dropped.
Result<std::vector<MigDestroyStep>> claim_expired(Ledger& ledger, const Config& cfg, const Gpu& gpu, std::int64_t now,
                                                  const std::vector<std::string>& made,
                                                  std::vector<IdleMigInstance>& report) {
  std::vector<MigDestroyStep> steps;
  auto updated = ledger.update([&](LedgerState& s) -> Result<bool> {
    bool changed = sync_idle_records(s, gpu, now);
    const auto expired = expired_idle(s, gpu, cfg.mig.idle_timeout_s, now);
    Inventory one;
    one.gpus.push_back(gpu);
    const auto idle = idle_mig_instances(one, s, now);
    for (const MigOccupant& o : mig_view(gpu, s.entries, s.mig_idle, {}, made).occupants) {
      if (!o.destroyable() || !std::all_of(o.uuids.begin(), o.uuids.end(), [&](const std::string& u) {
            return std::find(expired.begin(), expired.end(), u) != expired.end();
          }))
        continue;
      steps.push_back(MigDestroyStep{o.gi, o.profile_name, o.placement, o.uuids});
      for (const auto& i : idle)
        if (i.gi == o.gi) report.push_back(i);
      for (const std::string& u : o.uuids) changed = drop_idle_record(s, u) || changed;
    }
    return changed;
  });
  if (!updated) return std::unexpected(updated.error());
  return steps;
}

Result<> reclaim_gpu(const Config& cfg, const MigDriver& driver, const Gpu& cached, std::int64_t now,
                     const InventoryListener& on_changed, MigReclaimReport& report) {
  auto lock = MigGpuLock::acquire(cfg, cached.uuid);
  if (!lock) return std::unexpected(lock.error());
  auto device = nvml::mig_device(driver.lib(), cached.uuid);
  if (!device) return std::unexpected(device.error());
  auto note = recover_mig_journal(driver, *device, cfg, cached);
  if (!note) return std::unexpected(note.error());
  if (!note->empty()) report.notes.push_back(*note);
  auto inv = rediscover_mig(cfg);
  if (!inv) return std::unexpected(inv.error());
  const Gpu* gpu = inv->gpu_by_uuid(cached.uuid);
  if (gpu == nullptr || !gpu->mig_enabled) return {};
  auto made = prune_mig_made(cfg, *gpu);
  if (!made) return std::unexpected(made.error());
  Ledger ledger(LedgerOptions::from(cfg));
  auto steps = claim_expired(ledger, cfg, *gpu, now, *made, report.destroyed);
  if (!steps) return std::unexpected(steps.error());
  auto destroyed = destroy_gpu_instances(driver, *device, *gpu, *steps);
  if (steps->empty() && note->empty()) return destroyed;
  auto fresh = refresh_after_mig_change(cfg, on_changed, report.notes);
  if (!fresh) return std::unexpected(fresh.error());
  if (const Gpu* now_gpu = fresh->gpu_by_uuid(cached.uuid))
    if (auto pruned = prune_mig_made(cfg, *now_gpu); !pruned) return std::unexpected(pruned.error());
  return destroyed;
}

}  // namespace

Result<MigReclaimReport> reclaim_idle_mig(const Config& cfg, std::int64_t now, const InventoryListener& on_changed) {
  MigReclaimReport report;
  const bool any_dynamic =
      cfg.mig.mode == MigMode::dynamic || std::any_of(cfg.mig.gpus.begin(), cfg.mig.gpus.end(),
                                                      [](const auto& kv) { return kv.second == MigMode::dynamic; });
  if (!any_dynamic) return report;
  auto cached = inventory_for_allocation(cfg, discover);
  if (!cached) return std::unexpected(cached.error());
  const DynamicMig dyn{&cfg.mig, nullptr};
  std::vector<const Gpu*> dynamic;
  for (const Gpu& g : cached->gpus)
    if (dyn.dynamic(g)) dynamic.push_back(&g);
  if (!dynamic.empty() && uses_simulated_machine(cfg)) {
    report.notes.push_back("dynamic MIG GPUs are not reclaimed: the simulated backend cannot change MIG instances");
  } else if (!dynamic.empty()) {
    auto driver = MigDriver::open(cfg);
    if (!driver) return std::unexpected(driver.error());
    for (const Gpu* g : dynamic)
      if (auto r = reclaim_gpu(cfg, *driver, *g, now, on_changed, report); !r)
        return std::unexpected(r.error().wrap(text::cat("GPU ", g->index)));
  }
  auto inv = inventory_for_allocation(cfg, discover);
  if (!inv) return std::unexpected(inv.error());
  auto state = Ledger(LedgerOptions::from(cfg)).read();
  if (!state) return std::unexpected(state.error());
  report.idle = idle_mig_instances(*inv, *state, now);
  return report;
}

}  // namespace gpufrac
