#include "core/ledger/ledger_mig.hpp"

#include <algorithm>
#include <tuple>

namespace gpufrac {

bool on_dynamic_gpu(const LedgerEntry& e, const MigConfig& mig) {
  return mig.mode_for(e.gpu_index, e.gpu_uuid) == MigMode::dynamic;
}

void record_idle(LedgerState& state, const std::vector<LedgerEntry>& released, const MigConfig& mig, std::int64_t now) {
  for (const LedgerEntry& e : released) {
    if (!e.mig || !on_dynamic_gpu(e, mig)) continue;
    const bool still_booked = std::any_of(state.entries.begin(), state.entries.end(),
                                          [&](const LedgerEntry& o) { return o.device_uuid == e.device_uuid; });
    if (still_booked || find_idle_record(state, e.device_uuid) != nullptr) continue;
    state.mig_idle.push_back(MigIdleRecord{e.device_uuid, e.gpu_uuid, now});
  }
}

bool drop_idle_record(LedgerState& state, const std::string& uuid) {
  return std::erase_if(state.mig_idle, [&](const MigIdleRecord& r) { return r.uuid == uuid; }) > 0;
}

const MigIdleRecord* find_idle_record(const LedgerState& state, const std::string& uuid) {
  for (const auto& r : state.mig_idle)
    if (r.uuid == uuid) return &r;
  return nullptr;
}

bool sync_idle_records(LedgerState& state, const Gpu& gpu, std::int64_t now) {
  auto booked = [&](const std::string& uuid) {
    return std::any_of(state.entries.begin(), state.entries.end(),
                       [&](const LedgerEntry& e) { return e.device_uuid == uuid; });
  };
  auto exists = [&](const std::string& uuid) {
    return std::any_of(gpu.mig_instances.begin(), gpu.mig_instances.end(),
                       [&](const MigInstance& m) { return m.uuid == uuid; });
  };
  const std::size_t dropped = std::erase_if(state.mig_idle, [&](const MigIdleRecord& r) {
    return r.gpu_uuid == gpu.uuid && (!exists(r.uuid) || booked(r.uuid));
  });
  bool changed = dropped > 0;
  for (const MigInstance& m : gpu.mig_instances) {
    if (booked(m.uuid) || find_idle_record(state, m.uuid) != nullptr) continue;
    state.mig_idle.push_back(MigIdleRecord{m.uuid, gpu.uuid, now});
    changed = true;
  }
  return changed;
}

std::vector<IdleMigInstance> idle_mig_instances(const Inventory& inv, const LedgerState& state, std::int64_t now) {
  std::vector<IdleMigInstance> out;
  for (const MigIdleRecord& r : state.mig_idle) {
    auto found = inv.mig_by_uuid(r.uuid);
    if (!found) continue;
    const auto [g, m] = *found;
    out.push_back(IdleMigInstance{g->index, g->uuid, m->uuid, m->profile_name, m->gi_id, m->ci_id, m->placement,
                                  std::max<std::int64_t>(0, now - r.since)});
  }
  std::sort(out.begin(), out.end(), [](const IdleMigInstance& a, const IdleMigInstance& b) {
    return std::tie(a.gpu_index, a.gi, a.ci) < std::tie(b.gpu_index, b.gi, b.ci);
  });
  return out;
}

std::vector<std::string> expired_idle(const LedgerState& state, const Gpu& gpu, std::uint32_t timeout_s,
                                      std::int64_t now) {
  std::vector<std::string> out;
  for (const MigIdleRecord& r : state.mig_idle)
    if (r.gpu_uuid == gpu.uuid && now - r.since >= static_cast<std::int64_t>(timeout_s)) out.push_back(r.uuid);
  return out;
}

}  // namespace gpufrac
