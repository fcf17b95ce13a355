// burst.reclaim: swap (docs/architecture.md "Swap"): the reclaimer checkpoints a borrower's
// processes on a GPU instead of killing them, and restores them once the GPU has room for them again.
// Order of a swap-out: the state file (phase out) before the first lock, every process locked, then
// each checkpointed, then the state file (phase swapped). Of a swap-in: the room checked (the swapped
// bytes fit beside every other share's request or use, and the driver has them free), the state
// file (phase in), each process restored, then unlocked, then the file removed. A reclaimer that dies
// at any step leaves the file; the next one (its keeper) unlocks what is LOCKED and keeps what is
// CHECKPOINTED (recover_swaps).
#include <time.h>

#include <algorithm>

#include "core/fault.hpp"
#include "core/log.hpp"
#include "core/process.hpp"
#include "core/text.hpp"
#include "reclaim/reclaimer.hpp"
#include "reclaim/swap_budget.hpp"

namespace gpufrac::reclaim {

namespace {

// How long a lock may wait for the borrower's submitted work: the owner's shim waits 15 s for its
// answer, and a process whose work outlasts this is stopped instead.
constexpr std::chrono::milliseconds kLockTimeout{3000};

std::int64_t now() {
  return static_cast<std::int64_t>(::time(nullptr));
}

// Locks every process; on a failure unlocks those it locked and says why ("" when all are locked).
std::string lock_all(const nvml::CheckpointDriver& d, const std::vector<SwappedProcess>& procs) {
  std::size_t locked = 0;
  std::string why;
  for (; locked < procs.size(); ++locked)
    if (auto r = d.lock(static_cast<int>(procs[locked].pid), kLockTimeout); !r) {
      why = r.error().message;
      break;
    }
  if (why.empty()) return why;
  for (std::size_t i = 0; i < locked; ++i)
    if (auto u = d.unlock(static_cast<int>(procs[i].pid)); !u) log::error("reclaim: " + u.error().message);
  return why;
}

}  // namespace

std::string Reclaimer::swap_blocker(const ShareSite& s, const SwapState* st) {
  if (s.mps) return "an MPS share (the driver cannot checkpoint MPS clients)";
  if (!ckpt_tried_) {
    ckpt_tried_ = true;
    if (auto d = nvml::CheckpointDriver::open(cfg_.burst.cuda_library)) {
      ckpt_.emplace(std::move(*d));
    } else {
      ckpt_why_ = d.error().message;
      log::warn("reclaim: burst.reclaim: swap cannot be used on this node: " + ckpt_why_ +
                "; borrowers are stopped instead, as under burst.reclaim: kill");
    }
  }
  if (!ckpt_) return ckpt_why_;
  if (st == nullptr) return "";
  std::optional<std::uint64_t> room;
  for (const auto& p : st->processes)
    if (auto r = cgroup_room(cfg_.proc_root, cfg_.cgroup_root, p.pid)) room = std::min(room.value_or(*r), *r);
  std::uint64_t swapped = 0;
  for (const auto& [key, other] : swapped_) swapped += other.bytes();
  return swap_room_problem(st->bytes(), room, cfg_.swap.host_memory, swapped);
}

bool Reclaimer::swap_out(const std::string& gpu, const std::vector<ShareSite>& sites, const Attribution& a,
                         std::size_t v, const std::string& owner, std::string& why) {
  const ShareSite& site = sites[v];
  SwapState st{gpu, site.id, owner, SwapPhase::out, now(), {}};
  for (const auto& p : a.of[v])
    if (auto stat = read_proc_stat(cfg_.proc_root, p.pid); stat && in_cgroups(cfg_.proc_root, p.pid, a.cgroups[v]))
      st.processes.push_back({p.pid, stat->start_time, p.bytes});
  if (st.processes.empty()) return false;  // gone meanwhile: the caller decides again
  if (why = swap_blocker(site, &st); !why.empty()) return false;
  if (auto w = save_swap_state(cfg_, site.key, st); !w) {
    why = "its swap state cannot be written: " + w.error().message;
    return false;
  }
  if (why = lock_all(*ckpt_, st.processes); !why.empty()) {  // nothing stays locked: the caller stops one
    remove_swap_state(cfg_, site.key);
    return false;
  }
  fault::point("swap-after-lock");
  std::vector<SwappedProcess> done;
  for (const auto& p : st.processes) {
    if (auto r = ckpt_->checkpoint(static_cast<int>(p.pid)); r)
      done.push_back(p);
    else  // locked and not checkpointed: stopped (a locked process may be killed, a live one may not)
      kill_one(gpu, site, a.cgroups[v], {p.pid, p.bytes}, owner, r.error().message);
  }
  fault::point("swap-after-checkpoint");
  st.processes = done;
  st.phase = SwapPhase::swapped;
  if (done.empty()) {
    remove_swap_state(cfg_, site.key);
    return true;
  }
  if (auto w = save_swap_state(cfg_, site.key, st); !w) log::error("reclaim: " + w.error().message);
  note_swapped_out(site, st);
  for (const auto& p : done) wait_gone(gpu, p.pid);
  return true;
}

void Reclaimer::note_swapped_out(const ShareSite& site, const SwapState& st) {
  for (const auto& p : st.processes) {
    log::warn(text::cat("reclaim: swapped out process ", p.pid, " of ", site.id, " (", text::format_bytes(p.bytes),
                        " on ", st.gpu_uuid, ", past its request ", text::format_bytes(site.request), ") for ",
                        st.owner, ", which is within its request; it is paused until the GPU has room for it again"));
    ReclaimEvent e{now(), st.gpu_uuid, site.id, p.pid, p.bytes, st.owner};
    e.action = "swapped out";
    record_swap(log_, std::move(e), site.key);
  }
  swapped_[site.key] = st;
  log_dirty_ = true;
  save_log();
}

std::vector<std::uint64_t> Reclaimer::swapped_bytes(const std::vector<ShareSite>& sites) const {
  std::vector<std::uint64_t> out;
  for (const auto& s : sites) {
    auto it = swapped_.find(s.key);
    out.push_back(it != swapped_.end() && it->second.gpu_uuid == s.gpu_uuid ? it->second.bytes() : 0);
  }
  return out;
}

void Reclaimer::swap_in(const std::string& gpu, const std::vector<ShareSite>& sites,
                        const std::vector<Reading>& readings, std::uint64_t total) {
  const auto swapped = swapped_bytes(sites);
  if (std::all_of(swapped.begin(), swapped.end(), [](std::uint64_t b) { return b == 0; })) return;
  auto procs = view_.processes(gpu);
  if (!procs) return;
  const Attribution a = attribute(sites, *procs, cfg_.proc_root);
  std::vector<std::uint64_t> used;
  for (const auto& r : readings) used.push_back(r.used);
  const auto shares = burst_shares(sites, used, a);
  for (std::size_t i = 0; i < sites.size(); ++i) {
    if (swapped[i] == 0) continue;
    SwapState& st = swapped_[sites[i].key];
    std::erase_if(st.processes, [&](const SwappedProcess& p) {
      return process_liveness(cfg_.proc_root, p.pid, p.start) == Liveness::exited ||
             process_liveness(cfg_.proc_root, p.pid, p.start) == Liveness::reused;
    });
    // Room: beside every other share's request (or use, if more), within its limit, and free in the
    // driver's view. A restore the GPU cannot hold is never started (a failed one may poison it).
    const std::uint64_t room = lend_ceiling(shares, i, total), free = total > a.total ? total - a.total : 0;
    if (!st.processes.empty() && (shares[i].held + st.bytes() > room || st.bytes() > free)) continue;
    if (st.processes.empty() || restore_share(gpu, sites[i], st)) {
      remove_swap_state(cfg_, sites[i].key);
      swapped_.erase(sites[i].key);
    }
  }
}

bool Reclaimer::restore_share(const std::string& gpu, const ShareSite& site, SwapState& st) {
  st.phase = SwapPhase::in;
  if (auto w = save_swap_state(cfg_, site.key, st); !w) log::error("reclaim: " + w.error().message);
  std::vector<SwappedProcess> left;
  for (const auto& p : st.processes) {
    const int pid = static_cast<int>(p.pid);
    fault::point("swap-before-restore");
    auto r = ckpt_->restore(pid);
    if (r) fault::point("swap-after-restore");
    if (r) r = ckpt_->unlock(pid);
    if (r) {
      log::warn(text::cat("reclaim: swapped in process ", p.pid, " of ", site.id, " (", text::format_bytes(p.bytes),
                          " on ", gpu, "): the GPU has room for it again; it runs on"));
      ReclaimEvent e{now(), gpu, site.id, p.pid, p.bytes, ""};
      e.action = "swapped in";
      record_swap(log_, std::move(e), site.key);
      log_dirty_ = true;
      continue;
    }
    auto state = ckpt_->state(pid);
    if (state && *state == nvml::ProcessState::checkpointed &&
        r.error().message.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos) {
      log::warn("reclaim: " + r.error().message);  // still swapped: tried again on a later pass
      left.push_back(p);
      continue;
    }
    // It cannot come back (a poisoned restore): stopped, as a checkpointed process may be.
    kill_one(gpu, site, {process_cgroups(cfg_.proc_root, p.pid)}, {p.pid, p.bytes}, st.owner,
             "its restore failed: " + r.error().message);
  }
  save_log();
  st.processes = std::move(left);
  st.phase = SwapPhase::swapped;
  if (st.processes.empty()) return true;
  if (auto w = save_swap_state(cfg_, site.key, st); !w) log::error("reclaim: " + w.error().message);
  return false;
}

void Reclaimer::recover_swaps(const std::vector<ShareSite>& sites) {
  for (const auto& site : sites) {
    if (swapped_.contains(site.key) || !recovered_.insert(site.key).second) continue;
    auto loaded = load_swap_state(cfg_, site.key);
    if (!loaded || !*loaded) {
      if (!loaded) log::error("reclaim: " + loaded.error().message);
      continue;
    }
    SwapState st = std::move(**loaded);
    if (auto why = swap_blocker(site, nullptr); !why.empty() && !ckpt_) {
      log::error("reclaim: " + site.id + " was swapped out, and swap cannot be used now: " + why);
      continue;
    }
    std::vector<SwappedProcess> kept;
    for (const auto& p : st.processes) {
      if (process_liveness(cfg_.proc_root, p.pid, p.start) != Liveness::alive) continue;
      auto s = ckpt_->state(static_cast<int>(p.pid));
      if (s && *s == nvml::ProcessState::checkpointed) {
        kept.push_back(p);
      } else if (s && *s == nvml::ProcessState::locked) {
        auto u = ckpt_->unlock(static_cast<int>(p.pid));
        log::warn(text::cat("reclaim: process ", p.pid, " of ", site.id,
                            " was left locked by a reclaimer that stopped (", to_string(st.phase),
                            "): ", u ? "unlocked" : u.error().message));
      }
    }
    st.processes = std::move(kept);
    st.phase = SwapPhase::swapped;
    if (st.processes.empty()) {
      remove_swap_state(cfg_, site.key);
      continue;
    }
    log::info(text::cat("reclaim: ", site.id, " stays swapped out (", text::format_bytes(st.bytes()), " on ",
                        st.gpu_uuid, "), found in its swap state"));
    if (auto w = save_swap_state(cfg_, site.key, st); !w) log::error("reclaim: " + w.error().message);
    swapped_[site.key] = std::move(st);
  }
}

void Reclaimer::forget_swaps(const std::set<std::string>& keys) {
  std::erase_if(swapped_, [&](const auto& kv) { return !keys.contains(kv.first); });
  std::erase_if(recovered_, [&](const std::string& k) { return !keys.contains(k); });
}

}  // namespace gpufrac::reclaim
