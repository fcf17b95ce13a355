#include "cli/status_model.hpp"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/status_burst.hpp"
#include "core/allocator/load.hpp"
#include "core/enforcement/enforcement.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/ledger/ledger_mig.hpp"
#include "core/ledger/ledger_mps.hpp"
#include "core/mig/mig_device.hpp"
#include "core/quantity.hpp"
#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

// How each booking stands: its state, age, live memory use and (when known) the time it achieved.
struct Sources {
  std::int64_t now = 0;
  const StateOf& state_of;
  const UsageOf& usage_of;
  const ComputeAchievedOf& achieved_of;
};

std::vector<ShareStatus> shares_of(const std::vector<const LedgerEntry*>& entries, const Sources& src) {
  std::vector<ShareStatus> out;
  for (const LedgerEntry* e : entries)
    out.push_back(ShareStatus{*e, src.state_of(*e), std::max<std::int64_t>(0, src.now - e->created),
                              src.usage_of ? src.usage_of(*e) : std::nullopt,
                              src.achieved_of ? src.achieved_of(*e) : std::nullopt});
  std::sort(out.begin(), out.end(), [](const ShareStatus& a, const ShareStatus& b) {
    return std::tie(a.entry.created, a.entry.container_id, a.entry.device_key) <
           std::tie(b.entry.created, b.entry.container_id, b.entry.device_key);
  });
  return out;
}

DeviceStatus gpu_status(const Gpu& g, const DeviceLoad& d, const AllocationConfig& cfg) {
  DeviceStatus s{
      g.index,    g.uuid, g.name, std::nullopt, g.mig_enabled, g.memory_bytes, gpu_capacity(g, cfg.overcommit),
      d.reserved, 0,      {}};
  if (d.exclusive == nullptr && !g.mig_enabled && s.capacity > d.reserved) s.free = s.capacity - d.reserved;
  if (!g.mig_enabled) {
    s.compute_booked = d.compute;
    s.compute_free = d.exclusive == nullptr ? compute_free(d) : 0;
  }
  return s;
}

// A MIG device: its own booking, and its GPU instance's memory that all its compute instances share.
DeviceStatus instance_status(const Gpu& g, const MigInstance& m, const Load& load) {
  const DeviceLoad& d = load.of(m.uuid);
  const std::string name = mig_device_profile(g, m);
  std::uint64_t gi_reserved = 0;
  for (const MigInstance& o : g.mig_instances)
    if (o.gi_id == m.gi_id) gi_reserved = saturating_add(gi_reserved, load.of(o.uuid).reserved);
  const std::uint64_t left = m.memory_bytes > gi_reserved ? m.memory_bytes - gi_reserved : 0;
  DeviceStatus s{g.index,        m.uuid,         name,       MigRef{m.gi_id, m.ci_id, name}, false,
                 m.memory_bytes, m.memory_bytes, d.reserved, d.entries.empty() ? left : 0,   {}};
  s.gi_profile = m.profile_name;
  s.gi_reserved = gi_reserved;
  s.multiprocessors = m.multiprocessors;
  s.split = name != m.profile_name;
  return s;
}

// Sets ShareStatus::gpus on every GPU's booking of each multi-GPU share (keys gpus/<k>).
void mark_multi_gpu_shares(StatusReport& r) {
  std::map<std::string, std::vector<ShareStatus*>> groups;
  for (auto& d : r.devices)
    for (auto& s : d.shares)
      if (auto k = parse_gpus_device_key(s.entry.device_key))
        groups[text::cat(container_key(s.entry), "\n", k->base, "\n", s.entry.request)].push_back(&s);
  for (auto& [key, members] : groups) {
    std::vector<std::uint32_t> indices;
    for (const ShareStatus* m : members) indices.push_back(m->entry.gpu_index);
    std::sort(indices.begin(), indices.end());
    for (ShareStatus* m : members) m->gpus = indices;
  }
}

// A GPU in MPS mode: since when it has had no SM share (its ledger record), while it has none.
void mark_sm_mode(DeviceStatus& d, const DeviceLoad& load, const LedgerState& ledger, std::int64_t now,
                  std::uint32_t idle_timeout_s) {
  d.sm_mode = load.sm_mode();
  if (const MpsGpuRecord* rec = find_mps_record(ledger, d.uuid); rec && load.sm_shares == 0) {
    d.sm_idle_s = std::max<std::int64_t>(0, now - rec->since);
    d.sm_switch_back_s = std::max<std::int64_t>(0, static_cast<std::int64_t>(idle_timeout_s) - *d.sm_idle_s);
  }
}

nlohmann::json mps_json(const DeviceStatus& d) {
  return {{"state", d.mps_state},
          {"daemon_pid", d.mps_daemon_pid ? nlohmann::json(d.mps_daemon_pid) : nlohmann::json(nullptr)},
          {"server_pid", d.mps_server_pid ? nlohmann::json(*d.mps_server_pid) : nlohmann::json(nullptr)},
          {"clients", d.mps_clients},
          {"idle_s", d.sm_idle_s ? nlohmann::json(*d.sm_idle_s) : nlohmann::json(nullptr)},
          // Idle: back to time sharing at the next time share, or by the idle timeout in this many s.
          {"switch_back", d.sm_switch_back_s
                              ? nlohmann::json{{"on_time_share", true}, {"timeout_in_s", *d.sm_switch_back_s}}
                              : nlohmann::json(nullptr)}};
}

nlohmann::json share_json(const ShareStatus& s) {
  nlohmann::json j = entry_to_json(s.entry);
  j["state"] = s.state;
  j["age_s"] = s.age_s;
  j["used_bytes"] = s.used_bytes ? nlohmann::json(*s.used_bytes) : nlohmann::json(nullptr);
  j["compute_achieved_ppm"] =
      s.compute_achieved_ppm ? nlohmann::json(*s.compute_achieved_ppm) : nlohmann::json(nullptr);
  j["enforcement"] = to_string(share_holder(s.entry));
  j["usage_region_damaged"] = s.region_damaged.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.region_damaged);
  if (!s.gpus.empty()) j["gpus"] = s.gpus;
  add_burst_json(j, s);
  if (s.entry.limit_bytes != 0)
    j["swapped"] =
        s.swapped
            ? nlohmann::json{{"bytes", s.swapped->bytes}, {"since", s.swapped->since}, {"owner", s.swapped->owner}}
            : nlohmann::json(nullptr);
  return j;
}

}  // namespace

StatusReport build_status(const Inventory& inv, const LedgerState& ledger, const AllocationConfig& cfg,
                          std::int64_t now, const StateOf& state_of, const UsageOf& usage_of,
                          const ComputeAchievedOf& achieved_of) {
  const Load load = compute_load(inv, ledger.entries, ledger.mps);
  const Sources src{now, state_of, usage_of, achieved_of};
  StatusReport r;
  r.overcommit = cfg.overcommit;
  std::vector<const Gpu*> gpus;
  for (const auto& g : inv.gpus) gpus.push_back(&g);
  std::sort(gpus.begin(), gpus.end(), [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
  for (const Gpu* g : gpus) {
    r.devices.push_back(gpu_status(*g, load.of(g->uuid), cfg));
    r.devices.back().shares = shares_of(load.of(g->uuid).entries, src);
    mark_sm_mode(r.devices.back(), load.of(g->uuid), ledger, now, cfg.sm_sharing.idle_timeout_s);
    std::vector<const MigInstance*> instances;
    for (const auto& m : g->mig_instances) instances.push_back(&m);
    std::sort(instances.begin(), instances.end(), [](const MigInstance* a, const MigInstance* b) {
      return std::tie(a->gi_id, a->ci_id) < std::tie(b->gi_id, b->ci_id);
    });
    for (const MigInstance* m : instances) {
      r.devices.push_back(instance_status(*g, *m, load));
      r.devices.back().shares = shares_of(load.of(m->uuid).entries, src);
      if (const MigIdleRecord* rec = find_idle_record(ledger, m->uuid); rec && load.of(m->uuid).entries.empty())
        r.devices.back().idle_s = std::max<std::int64_t>(0, now - rec->since);
    }
  }
  r.unknown = shares_of(load.unknown, src);
  mark_multi_gpu_shares(r);
  return r;
}

bool same_multi_gpu_share(const ShareStatus& a, const ShareStatus& b) {
  if (a.gpus.empty() || b.gpus.empty() || container_key(a.entry) != container_key(b.entry) ||
      a.entry.request != b.entry.request)
    return false;
  return base_device_key(a.entry.device_key) == base_device_key(b.entry.device_key);
}

nlohmann::json status_json(const StatusReport& r) {
  nlohmann::json devices = nlohmann::json::array(), unknown = nlohmann::json::array();
  for (const auto& d : r.devices) {
    nlohmann::json shares = nlohmann::json::array();
    for (const auto& s : d.shares) shares.push_back(share_json(s));
    nlohmann::json j{{"type", d.mig ? "mig" : "gpu"},
                     {"gpu_index", d.gpu_index},
                     {"uuid", d.uuid},
                     {"name", d.name},
                     {"mig_mode", d.mig_mode},
                     {"total", d.total},
                     {"capacity", d.capacity},
                     {"reserved", d.reserved},
                     {"free", d.free},
                     {"shares", std::move(shares)}};
    if (d.mig) {
      j["mig"] = {{"gi", d.mig->gi}, {"ci", d.mig->ci}, {"profile", d.mig->profile}};
      j["multiprocessors"] = d.multiprocessors ? nlohmann::json(d.multiprocessors) : nlohmann::json(nullptr);
      j["gpu_instance"] = {{"gi", d.mig->gi},
                           {"profile", d.gi_profile},
                           {"total", d.total},
                           {"reserved", d.gi_reserved},
                           {"free", d.total > d.gi_reserved ? d.total - d.gi_reserved : 0}};
    }
    if (!d.mig && !d.mig_mode) {
      j["compute_booked_ppm"] = d.compute_booked;
      j["compute_free_ppm"] = d.compute_free;
      j["compute_mode"] = d.sm_mode ? "sm" : "time";  // sm: the ppm are of the GPU's SMs
      if (d.sm_mode) j["mps"] = mps_json(d);
    }
    if (!d.compute_tampered.empty()) j["compute_arbiter_tampered"] = d.compute_tampered;
    if (d.idle_s) {
      j["state"] = "idle";
      j["idle_s"] = *d.idle_s;
    }
    devices.push_back(std::move(j));
  }
  for (const auto& s : r.unknown) unknown.push_back(share_json(s));
  return {{"overcommit", r.overcommit}, {"devices", std::move(devices)}, {"unknown_device_shares", std::move(unknown)}};
}

std::string format_age(std::int64_t s) {
  if (s < 60) return text::cat(s, "s");
  auto two = [](std::int64_t v) { return v < 10 ? text::cat("0", v) : text::cat(v); };
  if (s < 3600) return text::cat(s / 60, "m", two(s % 60), "s");
  if (s < 86400) return text::cat(s / 3600, "h", two(s / 60 % 60), "m");
  return text::cat(s / 86400, "d", two(s / 3600 % 24), "h");
}

bool DeviceStatus::compute_tampering_by(const std::string& key) const {
  const std::string lane = "(" + key + ")'s ", file = "the lane file of \"" + key + "\"";
  for (const auto& why : compute_tampered) {
    // A witness is named first ("slot 1 (<key>) saw slot 2 (<other>)'s lane ..."): the accused is
    // the slot whose possessive follows.
    const auto at = why.find(lane);
    if ((at != std::string::npos && why.find(" saw ", at) == std::string::npos) || why.starts_with(file)) return true;
  }
  return false;
}

}  // namespace gpufrac::cli
