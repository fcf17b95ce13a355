// The burst reclaimer (docs/architecture.md "Burstable memory"): a host process that runs while a
// booking on the node has a limit above its request (`gpufrac reclaim run`, started on demand by the
// front-ends). Each pass (every 20 ms) it reads the ledger, and for every GPU holding a burst
// booking and each share there:
//   - stores its beat in the share's usage region (the shims then know a reclaimer runs) and, for a
//     share with a burst limit, the ceiling it may borrow up to (core/burst/lending.hpp, from the
//     usage the regions publish);
//   - answers the share's request for memory back: from the driver's per-process view only, a share
//     the driver sees within its request that finds the GPU full gets the process of the borrower
//     furthest past its request stopped (SIGKILL; logged, counted, an event in reclaims.json), again
//     until the memory is free; under burst.reclaim: refuse, a refusal; under burst.reclaim: swap,
//     the borrower's processes on the GPU checkpointed instead (reclaim_swap.cpp: a swap state file
//     in its container's directory), and restored once the GPU has room for them again.
// About once a second it compares each region with the driver's view and flags the regions the
// driver contradicts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/burst/lending.hpp"
#include "core/config/config.hpp"
#include "core/fs.hpp"
#include "core/inventory/inventory.hpp"
#include "limits/host/region_channel.hpp"
#include "nvml/cuda_checkpoint.hpp"
#include "nvml/process_view.hpp"
#include "reclaim/reclaim_log.hpp"
#include "reclaim/reclaim_procs.hpp"
#include "reclaim/reclaim_shares.hpp"
#include "reclaim/swap_state.hpp"

namespace gpufrac::reclaim {

// One share's region as a pass read it: ok (read whole, with a valid header), what it says, and the
// bytes its live processes hold on the share's GPU (for a damaged region, its request: a share whose
// region cannot be believed borrows nothing, and its neighbours lend nothing of its request).
struct Reading {
  bool ok = false;
  limits::RegionReading region;
  std::uint64_t used = 0;
};

class Reclaimer {
 public:
  Reclaimer(Config cfg, ProcessView view, Inventory inv);
  // One pass; false once no booking has a burst limit.
  Result<bool> pass();

 private:
  // A share's region, kept open between passes (never mapped: limits/host/region_channel.hpp).
  struct Region {
    fs::UniqueFd fd;
    std::unique_ptr<gpufrac_region> buf;  // what the last pass read of it
  };
  Region* region(const std::string& path);
  // A region that could not be read or written: closed (opened again next pass); a damaged one (a
  // wrong size or header) is said once in the log while its share is booked, however often it is.
  void drop(const std::string& path, const std::string& id, const Error& why);
  std::vector<Reading> read_sites(const std::vector<ShareSite>& sites);
  // Shares of one cgroup (reclaim_procs.hpp): in the log for status, and said once in gpufrac's.
  void note_untold(const std::string& gpu, const std::vector<ShareSite>& sites, const Memberships& m);
  void publish(const std::string& gpu, const std::vector<ShareSite>& sites, const std::vector<Reading>& readings,
               std::uint64_t total, std::uint32_t beat);
  void answer(const std::string& gpu, const std::vector<ShareSite>& sites, const std::vector<Reading>& readings,
              std::uint64_t total);
  ReclaimAnswer serve(const std::string& gpu, const std::vector<ShareSite>& sites,
                      const std::vector<std::uint64_t>& used, std::uint64_t total, std::size_t asker,
                      std::uint64_t bytes);
  bool stop_one(const std::string& gpu, const std::vector<ShareSite>& sites, const Attribution& a, std::size_t victim,
                const std::string& owner);
  // SIGKILL to one process of the victim, logged and counted; `reason`: why swap was not used.
  bool kill_one(const std::string& gpu, const ShareSite& victim, const std::vector<std::string>& cgroups,
                const GpuProcessMemory& p, const std::string& owner, const std::string& reason);

  // burst.reclaim: swap (reclaim_swap.cpp). Why the share cannot be swapped ("" when it can): an
  // MPS share, the driver has no checkpoint API, the processes' memory cgroup or the node's
  // swap.host-memory has no room for their bytes (`st`: the processes; none: only the driver).
  std::string swap_blocker(const ShareSite& s, const SwapState* st);
  // Locks, then checkpoints every process of the victim on the GPU; false, with `why`, when swap
  // could not be used and nothing of the victim's was stopped.
  bool swap_out(const std::string& gpu, const std::vector<ShareSite>& sites, const Attribution& a, std::size_t victim,
                const std::string& owner, std::string& why);
  // Logs, counts and keeps a swap-out (its processes all checkpointed).
  void note_swapped_out(const ShareSite& site, const SwapState& st);
  // Each swapped share of the GPU whose bytes fit again: restored and unlocked.
  void swap_in(const std::string& gpu, const std::vector<ShareSite>& sites, const std::vector<Reading>& readings,
               std::uint64_t total);
  bool restore_share(const std::string& gpu, const ShareSite& site, SwapState& st);
  // The swap state files of the GPU's shares that this reclaimer does not hold (one killed mid-swap
  // left them): a LOCKED process unlocked, a CHECKPOINTED one kept swapped, the rest dropped.
  void recover_swaps(const std::vector<ShareSite>& sites);
  // Shares no longer booked (deleted while swapped): their state forgotten.
  void forget_swaps(const std::set<std::string>& keys);
  // The bytes of the GPU's swapped shares, per site (0 for the others).
  std::vector<std::uint64_t> swapped_bytes(const std::vector<ShareSite>& sites) const;
  void wait_gone(const std::string& gpu, std::int64_t pid);
  void check_regions(const std::string& gpu, const std::vector<ShareSite>& sites, const std::vector<Reading>& readings);
  // A request for a device of the region that no burst GPU covers: none (the shim stops waiting).
  void answer_leftovers(const std::map<std::string, std::set<int>>& served);
  void save_log();

  Config cfg_;
  ProcessView view_;
  Inventory inv_;
  std::map<std::string, Region> regions_;  // by path, kept open between passes
  std::set<std::string> damaged_;          // booked shares' regions said damaged in the log, by path
  ReclaimLog log_;
  bool log_dirty_ = false;
  std::uint64_t passes_ = 0;
  // Swap: the driver's checkpoint API, opened at the first swap (ckpt_why_: why it could not be).
  std::optional<nvml::CheckpointDriver> ckpt_;
  std::string ckpt_why_;
  bool ckpt_tried_ = false;
  std::map<std::string, SwapState> swapped_;  // by container key: the shares swapped out
  std::set<std::string> recovered_;           // keys whose swap state file was looked for
};

// CLOCK_MONOTONIC milliseconds mod 2^32, never 0 (a region's reclaimer_beat).
std::uint32_t reclaimer_beat_now();

}  // namespace gpufrac::reclaim
