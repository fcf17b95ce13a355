#include "cli/gc_dry_run.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "cli/node_view.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_limits.hpp"
#include "core/ledger/ledger_mig.hpp"
#include "core/ledger/ledger_mps.hpp"
#include "core/mig/mig_plan.hpp"
#include "core/text.hpp"
#include "limits/host/arbiter_file.hpp"
#include "limits/host/region_file.hpp"
#include "nvml/discover.hpp"
#include "nvml/inventory_cache.hpp"
#include "nvml/mig_made.hpp"
#include "nvml/mps_daemon.hpp"
#include "state/compute_slots.hpp"
#include "state/container_state.hpp"

namespace gpufrac::cli {

namespace {

// The reason gc's reclaim gives, for the states status shows; "" for a share gc keeps.
std::string why_reclaimed(const ShareStatus& s) {
  const LedgerEntry& e = s.entry;
  if (s.state == "pending (expired)") return text::cat("pending for ", s.age_s, " s");
  if (s.state == "exited") return text::cat("process ", e.pid, " exited");
  if (s.state == "pid reused") return text::cat("pid ", e.pid, " was reused");
  return "";
}

GcReport plan_ledger(const StatusReport& r, const Config& cfg) {
  GcReport out;
  auto visit = [&](const ShareStatus& s) {
    const std::string why = why_reclaimed(s);
    if (why.empty())
      ++out.kept;
    else
      out.reclaimed.push_back(Reclaimed{s.entry, why});
  };
  for (const auto& d : r.devices)
    for (const auto& s : d.shares) visit(s);
  for (const auto& s : r.unknown) visit(s);
  const std::string prefix = "." + fs::basename(cfg.ledger_path()) + ".tmp.";
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(cfg.state_dir, ec))
    if (f.path().filename().string().starts_with(prefix)) out.temp_files_removed.push_back(f.path().string());
  return out;
}

// What gc would free in the compute arbiters: slots of keys without a booking, old enough.
std::vector<std::string> unbooked_compute_slots(const Config& cfg, const std::set<std::string>& kept) {
  std::vector<std::string> out;
  const auto now = static_cast<std::uint64_t>(std::time(nullptr));
  for (const auto& path : compute_arbiters(cfg)) {
    auto view = limits::read_arbiter(path);
    if (!view) continue;
    for (const auto& s : view->slots)
      if (!kept.contains(s.key) && now >= s.created_s + kComputeSlotMinAgeS) out.push_back(s.key);
  }
  return out;
}

FilesReport plan_files(const Config& cfg, const NodeView& node, const GcReport& ledger) {
  std::set<std::string> kept;  // containers with a booking gc keeps
  for (const auto& e : node.ledger.entries)
    if (std::none_of(ledger.reclaimed.begin(), ledger.reclaimed.end(),
                     [&](const Reclaimed& r) { return r.entry == e; }))
      kept.insert(container_key(e));
  FilesReport out;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(cfg.state_dir + "/containers", ec)) {
    const std::string id = d.path().filename();
    if (!kept.contains(id)) {
      out.dirs_removed.push_back(id);
      continue;
    }
    if (auto u = limits::read_region_usage(container_files(cfg, id).usage, cfg.proc_root))
      out.dead_slots += u->dead_slots;
  }
  out.compute_slots_freed = unbooked_compute_slots(cfg, kept);
  return out;
}

// What gc would destroy: the GPU instances whose compute instances are all idle past the timeout
// and that gpufrac may destroy (core/mig/mig_plan.hpp: split ones only when it made them all).
MigReclaimReport plan_mig(const Config& cfg, const NodeView& node, std::int64_t now) {
  std::set<std::string> doomed;
  for (const Gpu& g : node.inventory.gpus) {
    auto made = read_mig_made(cfg, g.uuid);
    const auto expired = expired_idle(node.ledger, g, cfg.mig.idle_timeout_s, now);
    for (const MigOccupant& o :
         mig_view(g, node.ledger.entries, node.ledger.mig_idle, {}, made ? *made : std::vector<std::string>{})
             .occupants)
      if (o.destroyable() && std::all_of(o.uuids.begin(), o.uuids.end(), [&](const std::string& u) {
            return std::find(expired.begin(), expired.end(), u) != expired.end();
          }))
        doomed.insert(o.uuids.begin(), o.uuids.end());
  }
  MigReclaimReport out;
  for (auto& i : idle_mig_instances(node.inventory, node.ledger, now))
    (doomed.contains(i.uuid) ? out.destroyed : out.idle).push_back(std::move(i));
  return out;
}

// The records gc would clear: those waiting, and the limits of the bookings it would reclaim.
LimitsReport plan_limits(const NodeView& node, const GcReport& ledger, std::int64_t now) {
  LedgerState after = node.ledger;
  std::vector<LedgerEntry> gone;
  for (const auto& r : ledger.reclaimed) gone.push_back(r.entry);
  std::erase_if(after.entries,
                [&](const LedgerEntry& e) { return std::find(gone.begin(), gone.end(), e) != gone.end(); });
  record_limits_to_clear(after, gone, now);
  LimitsReport out;
  for (const auto& rec : after.limits_to_clear)
    if (!limit_held(after, rec.gpu_uuid, rec.limit.cgroup)) out.cleared.push_back(rec);
  return out;
}

// Whether gc reads the inventory: to reclaim dynamic MIG instances (nvml/mig_reclaim.hpp) or MPS
// daemons (cmd_gc.cpp's reclaim_mps); everything else it decides from the ledger and the processes.
bool gc_reads_inventory(const Config& cfg) {
  if (cfg.mig.mode == MigMode::dynamic || std::any_of(cfg.mig.gpus.begin(), cfg.mig.gpus.end(),
                                                      [](const auto& kv) { return kv.second == MigMode::dynamic; }))
    return true;
  auto state = Ledger(LedgerOptions::from(cfg)).read();
  return !state || !state->mps.empty() || !mps_recorded_gpus(cfg).empty();
}

// The inventory the plan is made on. gc works on a cache that no longer matches the node wherever it
// does not read the inventory, so the plan does too: on the cache as it is (a warning on stderr
// says so); where gc would refuse, the plan refuses in the same line.
Result<Inventory> gc_inventory(const Config& cfg) {
  auto inv = inventory_for_reading(cfg, discover);
  if (inv || gc_reads_inventory(cfg)) return inv;
  auto cached = read_inventory_cache(cfg);
  if (!cached) return inv;
  std::fprintf(stderr, "gpufrac: warning: %s; planned on the cached inventory, as gc reclaims\n",
               inv.error().message.c_str());
  return cached;
}

}  // namespace

// The GPUs in MPS mode whose daemon gc would stop (no SM share, idle past the timeout) or keep.
MpsReclaim plan_mps(const Config& cfg, const NodeView& node, std::int64_t now) {
  MpsReclaim out;
  const std::uint32_t timeout = cfg.allocation.sm_sharing.idle_timeout_s;
  for (const auto& r : node.ledger.mps) {
    const Gpu* g = node.inventory.gpu_by_uuid(r.gpu_uuid);
    const std::string name = g ? text::cat("GPU ", g->index) : r.gpu_uuid;
    if (sm_shares_on(node.ledger, r.gpu_uuid) != 0)
      out.kept.push_back(text::cat("kept the MPS daemon of ", name, " (SM shares on it)"));
    else if (now - r.since >= static_cast<std::int64_t>(timeout))
      out.stopped.push_back(
          text::cat("stopped the MPS daemon of ", name, " (idle ", now - r.since, " s; compute mode restored)"));
    else
      out.kept.push_back(
          text::cat("kept the MPS daemon of ", name, " (idle ", now - r.since, " s of ", timeout, " s)"));
  }
  return out;
}

Result<GcPlan> plan_gc(const Config& cfg, std::int64_t now) {
  auto inv = gc_inventory(cfg);
  if (!inv) return std::unexpected(inv.error());
  auto node = read_node(cfg, now, std::move(*inv));
  if (!node) return std::unexpected(node.error());
  GcPlan p;
  p.ledger = plan_ledger(node->report, cfg);
  p.files = plan_files(cfg, *node, p.ledger);
  p.mig = plan_mig(cfg, *node, now);
  p.limits = plan_limits(*node, p.ledger, now);
  p.mps = plan_mps(cfg, *node, now);
  return p;
}

}  // namespace gpufrac::cli
