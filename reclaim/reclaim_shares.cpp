#include "reclaim/reclaim_shares.hpp"

#include <algorithm>

#include "core/plan/plan.hpp"
#include "core/quantity.hpp"
#include "limits/host/limit_file.hpp"
#include "state/claim_members.hpp"

namespace gpufrac::reclaim {

namespace {

// The device index of gpu_uuid in the container's limit file (the region's device order).
int device_index(const Config& cfg, const std::string& key, const std::string& gpu_uuid) {
  auto file = limits::read_limit_file(container_files(cfg, key).limits);
  if (!file) return -1;
  for (std::size_t i = 0; i < file->devices.size(); ++i)
    if (file->devices[i].uuid == gpu_uuid) return static_cast<int>(i);
  return -1;
}

void add_entry(std::vector<ShareSite>& sites, const LedgerEntry& e, const Config& cfg) {
  const std::string key = container_key(e);
  auto it = std::find_if(sites.begin(), sites.end(), [&](const ShareSite& s) { return s.key == key; });
  if (it == sites.end()) {
    ShareSite s;
    s.key = key;
    s.id = e.claim_owned() ? e.claim : e.container_id;
    s.gpu_uuid = e.gpu_uuid;
    s.region = container_files(cfg, key).usage;
    s.device = device_index(cfg, key, e.gpu_uuid);
    if (e.claim_owned()) s.members = claim_members(cfg, key);
    it = sites.insert(sites.end(), std::move(s));
  }
  if (e.compute_mode == ComputeMode::sm) it->mps = true;
  it->request = saturating_add(it->request, e.bytes);
  it->limit = saturating_add(it->limit, e.limit());
  if (it->pid == 0 && !e.claim_owned()) {
    it->pid = e.pid;
    it->pid_start = e.pid_start;
  }
}

}  // namespace

bool has_burst_booking(const LedgerState& state) {
  return std::any_of(state.entries.begin(), state.entries.end(), [](const LedgerEntry& e) { return e.limit_bytes; });
}

std::map<std::string, std::vector<ShareSite>> burst_sites(const LedgerState& state, const Config& cfg) {
  std::map<std::string, std::vector<ShareSite>> out;
  for (const auto& e : state.entries)
    if (e.limit_bytes != 0 && !e.mig) out[e.gpu_uuid];
  for (const auto& e : state.entries)
    if (!e.mig && out.contains(e.gpu_uuid)) add_entry(out[e.gpu_uuid], e, cfg);
  for (const auto& m : state.mps)
    if (auto it = out.find(m.gpu_uuid); it != out.end())
      for (auto& s : it->second) s.mps = true;
  return out;
}

}  // namespace gpufrac::reclaim
