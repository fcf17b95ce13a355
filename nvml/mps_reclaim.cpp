// reclaim_idle_mps (nvml/mps_keeper.hpp): idle MPS daemons stopped, their GPUs back to time sharing.
#include <algorithm>
#include <ctime>

#include "core/ledger/ledger_mps.hpp"
#include "core/text.hpp"
#include "nvml/mps_daemon.hpp"
#include "nvml/mps_keeper.hpp"

namespace gpufrac {

namespace {

std::string gpu_name(const Inventory& inv, const std::string& uuid) {
  const Gpu* g = inv.gpu_by_uuid(uuid);
  return g ? text::cat("GPU ", g->index) : uuid;
}

// Whether the GPU's daemon may go: no SM share, and its record idle past the timeout (or no record).
bool may_stop(const LedgerState& s, const std::string& gpu, std::uint32_t timeout_s, std::int64_t now,
              std::int64_t& idle_s) {
  if (sm_shares_on(s, gpu) != 0) return idle_s = -1, false;
  const MpsGpuRecord* r = find_mps_record(s, gpu);
  idle_s = r ? now - r->since : 0;
  return r == nullptr || idle_s >= static_cast<std::int64_t>(timeout_s);
}

// The GPUs to look at: in the ledger's records or with a daemon record, by uuid.
std::vector<std::string> mps_gpus(const Config& cfg, const LedgerState& s) {
  std::vector<std::string> gpus = mps_recorded_gpus(cfg);
  for (const auto& r : s.mps) gpus.push_back(r.gpu_uuid);
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  return gpus;
}

// The GPU's daemon stopped and its ledger record dropped when it may go (idle for `timeout` s);
// what happened goes to `out`.
Result<> reclaim_one(const Config& cfg, const Inventory& inv, Ledger& ledger, const std::string& gpu,
                     std::uint32_t timeout, MpsReclaim& out) {
  auto lock = MpsGpuLock::acquire(cfg, gpu);
  if (!lock) return std::unexpected(lock.error());
  auto now_state = ledger.read();  // again under the GPU's lock
  if (!now_state) return std::unexpected(now_state.error());
  std::int64_t idle = 0;
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  if (!may_stop(*now_state, gpu, timeout, now, idle)) {
    out.kept.push_back(
        idle < 0 ? text::cat("kept the MPS daemon of ", gpu_name(inv, gpu), " (SM shares on it)")
                 : text::cat("kept the MPS daemon of ", gpu_name(inv, gpu), " (idle ", idle, " s of ", timeout, " s)"));
    return {};
  }
  auto notes = stop_mps_daemon(cfg, inv, gpu);
  if (!notes) return std::unexpected(notes.error());
  out.notes.insert(out.notes.end(), notes->begin(), notes->end());
  // The record goes last: a booking that came meanwhile keeps it (and starts a fresh daemon).
  auto dropped = ledger.update([&](LedgerState& s) -> Result<bool> {
    std::int64_t again = 0;
    return may_stop(s, gpu, timeout, static_cast<std::int64_t>(std::time(nullptr)), again) && drop_mps_record(s, gpu);
  });
  if (!dropped) return std::unexpected(dropped.error());
  out.stopped.push_back(
      text::cat("stopped the MPS daemon of ", gpu_name(inv, gpu), " (idle ", idle, " s; compute mode restored)"));
  return {};
}

}  // namespace

Result<MpsReclaim> reclaim_idle_mps(const Config& cfg, const Inventory& inv, Ledger& ledger,
                                    const std::string& except) {
  auto state = ledger.read();
  if (!state) return std::unexpected(state.error());
  MpsReclaim out;
  for (const auto& gpu : mps_gpus(cfg, *state))
    if (gpu != except)
      if (auto r = reclaim_one(cfg, inv, ledger, gpu, cfg.allocation.sm_sharing.idle_timeout_s, out); !r)
        return std::unexpected(r.error());
  return out;
}

Result<MpsReclaim> switch_back_idle_gpu(const Config& cfg, const Inventory& inv, Ledger& ledger,
                                        const std::string& gpu) {
  MpsReclaim out;
  if (auto r = reclaim_one(cfg, inv, ledger, gpu, 0, out); !r) return std::unexpected(r.error());
  return out;
}

std::vector<std::string> idle_mps_gpus(const Inventory& inv, const LedgerState& state) {
  auto gpus = expired_mps_gpus(state, 0, static_cast<std::int64_t>(std::time(nullptr)));
  const auto index = [&](const std::string& uuid) {
    const Gpu* g = inv.gpu_by_uuid(uuid);
    return g ? g->index : ~0u;
  };
  std::stable_sort(gpus.begin(), gpus.end(),
                   [&](const std::string& a, const std::string& b) { return index(a) < index(b); });
  return gpus;
}

}  // namespace gpufrac
