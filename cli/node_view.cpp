#include "cli/node_view.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>

#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/plan/plan.hpp"
#include "core/process.hpp"
#include "core/text.hpp"
#include "limits/host/arbiter_file.hpp"
#include "limits/host/region_file.hpp"
#include "nvml/discover.hpp"
#include "nvml/driver_limits.hpp"
#include "nvml/inventory_cache.hpp"
#include "nvml/mps_keeper.hpp"
#include "reclaim/reclaim_start.hpp"
#include "reclaim/swap_state.hpp"
#include "state/container_state.hpp"

namespace gpufrac::cli {

namespace {

std::string share_state(const LedgerEntry& e, const Config& cfg, std::int64_t now) {
  if (e.claim_owned()) return "prepared";  // a Kubernetes claim's: held until it is unprepared
  if (e.pending())
    return now - e.created > static_cast<std::int64_t>(cfg.allocation.pending_timeout_s) ? "pending (expired)"
                                                                                         : "pending";
  Liveness l = process_liveness(cfg.proc_root, e.pid, e.pid_start);
  return l == Liveness::alive || l == Liveness::unknown ? "running" : to_string(l);
}

// Each container's usage region read once per view (a bounded copy, never a mapping: a container
// that truncates or grows its region meanwhile cannot hurt the reader), by container key.
using Regions = std::shared_ptr<std::map<std::string, Result<limits::RegionUsage>>>;

const Result<limits::RegionUsage>& region_of(const Config& cfg, const Regions& regions, const LedgerEntry& e) {
  const std::string key = container_key(e);
  auto it = regions->find(key);
  if (it == regions->end())
    it = regions->emplace(key, limits::read_region_usage(container_files(cfg, key).usage, cfg.proc_root)).first;
  return it->second;
}

// Live usage from each container's accounting region (what its processes hold now, summed over
// live slots); nullopt when the container has no region (e.g. a pending booking) or a damaged one.
UsageOf live_usage(const Config& cfg, Regions regions) {
  return [regions, &cfg](const LedgerEntry& e) -> std::optional<std::uint64_t> {
    const auto& usage = region_of(cfg, regions, e);
    if (!usage) return std::nullopt;
    for (const auto& d : usage->devices)
      if (d.uuid == e.device_uuid) return d.used;
    return std::nullopt;
  };
}

// Shares whose region is damaged (ShareStatus::region_damaged): what the reader refused, in a line.
void mark_damaged(const Config& cfg, const Regions& regions, StatusReport& r) {
  auto mark = [&](ShareStatus& s) {
    if (s.entry.pending()) return;
    const auto& usage = region_of(cfg, regions, s.entry);
    if (!usage && limits::region_damaged(usage.error())) s.region_damaged = usage.error().message;
  };
  for (auto& d : r.devices)
    for (auto& s : d.shares) mark(s);
  for (auto& s : r.unknown) mark(s);
}

// Shares whose processes the burst reclaimer swapped out (ShareStatus::swapped): its swap state file
// (reclaim/swap_state.hpp), host state a container cannot write.
void mark_swapped(const Config& cfg, StatusReport& r) {
  auto mark = [&](ShareStatus& s) {
    if (s.entry.limit_bytes == 0 || s.entry.pending()) return;
    auto st = reclaim::load_swap_state(cfg, container_key(s.entry));
    if (st && *st && (*st)->gpu_uuid == s.entry.gpu_uuid && (*st)->phase != reclaim::SwapPhase::out)
      s.swapped = ShareStatus::Swapped{(*st)->bytes(), (*st)->since, (*st)->owner};
  };
  for (auto& d : r.devices)
    for (auto& s : d.shares) mark(s);
  for (auto& s : r.unknown) mark(s);
}

// The share of its GPU's time each booking's work held over the last 10 s
// (ShareStatus::compute_achieved_ppm): what its slot in the GPU's compute arbiter was charged
// (limits/host/arbiter_file.hpp). Unknown without a slot (no compute share, or not started yet).
ComputeAchievedOf compute_achieved(const Config& cfg) {
  auto cache = std::make_shared<std::map<std::string, std::optional<limits::ArbiterView>>>();
  return [cache, &cfg](const LedgerEntry& e) -> std::optional<std::uint32_t> {
    auto [it, fresh] = cache->try_emplace(e.device_uuid);
    if (fresh)
      if (auto v = limits::read_arbiter(compute_arbiter_path(cfg, e.device_uuid))) it->second = std::move(*v);
    if (!it->second || !it->second->tampered.empty()) return std::nullopt;  // not to be believed
    for (const auto& s : it->second->slots)
      if (s.key == container_key(e)) return s.achieved_ppm();
    return std::nullopt;
  };
}

// Why a GPU's compute arbiter looks tampered with (DeviceStatus::compute_tampered): what the host's
// checks of its lease file find, and the reports of containers whose processes ran unarbitrated past
// their bound (in their own usage regions, which the tamperer cannot write).
void mark_tampered(const Config& cfg, const Regions& regions, StatusReport& r) {
  for (auto& d : r.devices) {
    if (d.mig || d.mig_mode || d.compute_booked == 0) continue;
    if (auto v = limits::read_arbiter(compute_arbiter_path(cfg, d.uuid))) d.compute_tampered = v->tampered;
    for (const auto& s : d.shares) {
      const auto& usage = region_of(cfg, regions, s.entry);
      if (!usage) continue;
      for (const auto& u : usage->devices)
        if (u.uuid == d.uuid && u.compute_bypassed)
          d.compute_tampered.push_back("container " + container_key(s.entry) +
                                       " waited past its bound and ran unarbitrated");
    }
  }
}

// Where the driver holds a share's limit, what it counts for the cgroup (currentUsed) is the usage:
// it sees every allocation, the shim only those through the preloaded library. The driver is
// opened only when a booking has a limit; when it cannot be read, the region's figure stands.
UsageOf driver_usage(const Config& cfg, const LedgerState& ledger, UsageOf region) {
  auto readings = std::make_shared<std::map<std::pair<std::string, std::string>, std::uint64_t>>();
  if (std::any_of(ledger.entries.begin(), ledger.entries.end(), [](const LedgerEntry& e) { return e.driver_limit; }))
    if (auto drv = LimitDriver::open(cfg))
      for (const auto& e : ledger.entries)
        if (e.driver_limit)
          if (auto r = drv->get(e.gpu_uuid, e.driver_limit->cgroup); r && *r)
            (*readings)[{e.gpu_uuid, e.driver_limit->cgroup}] = (*r)->used;
  return [readings, region](const LedgerEntry& e) -> std::optional<std::uint64_t> {
    if (e.driver_limit)
      if (auto it = readings->find({e.gpu_uuid, e.driver_limit->cgroup}); it != readings->end()) return it->second;
    return region(e);
  };
}

// The pid in the reclaimer's lock file while that process is a gpufrac one (read, never locked: a
// reader holding the lock would keep a reclaimer from starting).
std::int64_t running_reclaimer(const Config& cfg) {
  auto text = fs::read_file(reclaim::reclaimer_lock_path(cfg), 64);
  if (!text) return 0;
  while (!text->empty() && text->back() == '\n') text->pop_back();
  const auto pid = text::parse_u64(*text);
  if (!pid || *pid == 0 || *pid > static_cast<std::uint64_t>(kMaxPid)) return 0;
  auto cmdline = fs::read_file(text::cat(cfg.proc_root, "/", *pid, "/cmdline"), 4096);
  return cmdline && cmdline->find("gpufrac") != std::string::npos ? static_cast<std::int64_t>(*pid) : 0;
}

// SM sharing: what each GPU in MPS mode's daemon says (one control-shell run per question).
void add_mps_states(const Config& cfg, NodeView& v) {
  for (auto& d : v.report.devices) {
    if (!d.sm_mode) continue;
    auto s = mps_server_status(cfg, v.inventory, d.uuid);
    if (!s) {
      d.mps_state = "unknown: " + s.error().message;
      continue;
    }
    d.mps_state = mps_state_text(*s);
    d.mps_daemon_pid = s->daemon_pid;
    d.mps_server_pid = s->server;
    d.mps_clients = s->clients.size();
  }
}

std::uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

}  // namespace

Result<NodeView> read_node(const Config& cfg, std::int64_t now) {
  auto inv = inventory_for_reading(cfg, discover);
  if (!inv) return std::unexpected(inv.error());
  return read_node(cfg, now, std::move(*inv));
}

Result<NodeView> read_node(const Config& cfg, std::int64_t now, Inventory inventory) {
  NodeView v;
  v.inventory = std::move(inventory);
  const LedgerOptions options = LedgerOptions::from(cfg);
  auto ledger = Ledger(options).read();
  if (!ledger) return std::unexpected(ledger.error());
  v.ledger = std::move(*ledger);
  v.ledger_file_bytes = file_size(options.path);
  v.reclaimer_pid = running_reclaimer(cfg);
  v.burst_reclaim = to_string(cfg.burst.reclaim);
  if (fs::exists(reclaim::reclaim_log_path(cfg)))
    if (auto log = reclaim::load_reclaim_log(reclaim::reclaim_log_path(cfg))) {
      v.reclaims = std::move(*log);
      v.reclaim_log = true;
      std::erase_if(v.reclaims.untold, [&](const auto& kv) {  // of shares released since the last pass
        return std::none_of(v.ledger.entries.begin(), v.ledger.entries.end(),
                            [&](const LedgerEntry& e) { return container_key(e) == kv.first; });
      });
    }
  auto regions = std::make_shared<Regions::element_type>();
  v.report = build_status(
      v.inventory, v.ledger, cfg.allocation, now, [&](const LedgerEntry& e) { return share_state(e, cfg, now); },
      driver_usage(cfg, v.ledger, live_usage(cfg, regions)), compute_achieved(cfg));
  add_mps_states(cfg, v);
  mark_tampered(cfg, regions, v.report);
  mark_damaged(cfg, regions, v.report);
  mark_swapped(cfg, v.report);
  return v;
}

}  // namespace gpufrac::cli
