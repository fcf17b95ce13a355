#include "core/ledger/ledger_mps.hpp"

#include <algorithm>

namespace gpufrac {

const MpsGpuRecord* find_mps_record(const LedgerState& state, const std::string& gpu_uuid) {
  auto it =
      std::find_if(state.mps.begin(), state.mps.end(), [&](const MpsGpuRecord& r) { return r.gpu_uuid == gpu_uuid; });
  return it == state.mps.end() ? nullptr : &*it;
}

std::vector<std::string> record_mps_gpus(LedgerState& state, const std::vector<Grant>& granted, std::int64_t now) {
  std::vector<std::string> recorded;
  for (const auto& g : granted) {
    if (!is_sm_share(g.compute_ppm, g.compute_mode) || find_mps_record(state, g.gpu_uuid) != nullptr) continue;
    state.mps.push_back(MpsGpuRecord{g.gpu_uuid, now});
    recorded.push_back(g.gpu_uuid);
  }
  return recorded;
}

std::size_t sm_shares_on(const LedgerState& state, const std::string& gpu_uuid) {
  return static_cast<std::size_t>(std::count_if(state.entries.begin(), state.entries.end(), [&](const LedgerEntry& e) {
    return e.gpu_uuid == gpu_uuid && is_sm_share(e.compute_ppm, e.compute_mode);
  }));
}

void record_mps_idle(LedgerState& state, const std::vector<LedgerEntry>& released, std::int64_t now) {
  for (const auto& e : released) {
    if (!is_sm_share(e.compute_ppm, e.compute_mode) || sm_shares_on(state, e.gpu_uuid) != 0) continue;
    auto it = std::find_if(state.mps.begin(), state.mps.end(),
                           [&](const MpsGpuRecord& r) { return r.gpu_uuid == e.gpu_uuid; });
    if (it == state.mps.end())
      state.mps.push_back(MpsGpuRecord{e.gpu_uuid, now});
    else
      it->since = std::max(it->since, now);
  }
}

bool drop_mps_record(LedgerState& state, const std::string& gpu_uuid) {
  return std::erase_if(state.mps, [&](const MpsGpuRecord& r) { return r.gpu_uuid == gpu_uuid; }) != 0;
}

std::vector<std::string> expired_mps_gpus(const LedgerState& state, std::uint32_t timeout_s, std::int64_t now) {
  std::vector<std::string> out;
  for (const auto& r : state.mps)
    if (sm_shares_on(state, r.gpu_uuid) == 0 && now - r.since >= static_cast<std::int64_t>(timeout_s))
      out.push_back(r.gpu_uuid);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpufrac
