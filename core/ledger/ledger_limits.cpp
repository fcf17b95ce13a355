#include "core/ledger/ledger_limits.hpp"

#include <algorithm>

namespace gpufrac {

bool limit_held(const LedgerState& state, const std::string& gpu_uuid, const std::string& cgroup) {
  return std::any_of(state.entries.begin(), state.entries.end(), [&](const LedgerEntry& e) {
    return e.driver_limit && e.gpu_uuid == gpu_uuid && e.driver_limit->cgroup == cgroup;
  });
}

bool drop_limit_to_clear(LedgerState& state, const std::string& gpu_uuid, const std::string& cgroup) {
  return std::erase_if(state.limits_to_clear,
                       [&](const LimitToClear& r) { return r.gpu_uuid == gpu_uuid && r.limit.cgroup == cgroup; }) > 0;
}

void record_limits_to_clear(LedgerState& state, const std::vector<LedgerEntry>& removed, std::int64_t now) {
  for (const auto& e : removed) {
    if (!e.driver_limit || limit_held(state, e.gpu_uuid, e.driver_limit->cgroup)) continue;
    drop_limit_to_clear(state, e.gpu_uuid, e.driver_limit->cgroup);  // the newer limit is the one to clear
    state.limits_to_clear.push_back(LimitToClear{e.gpu_uuid, *e.driver_limit, container_key(e), now});
  }
}

}  // namespace gpufrac
