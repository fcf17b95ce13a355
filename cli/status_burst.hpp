// Burstable memory in `gpufrac status` and `gpufrac metrics` (docs/architecture.md "Burstable
// memory"): a share's request, limit and what it borrows (what it uses past its request), and what
// the reclaimer did (reclaim/reclaim_log.hpp): the processes it stopped, the requests it refused under
// burst.reclaim: refuse, the regions the driver contradicts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cli/status_model.hpp"
#include "metrics/exposition.hpp"
#include "reclaim/reclaim_log.hpp"

namespace gpufrac::cli {

// What a share with a burst limit uses past its request (0 without a limit or a known use).
std::uint64_t borrowed_bytes(const ShareStatus& s);
// "25.0 GiB (15.0 GiB borrowed)", "3.0 GiB", "-": the USED cell.
std::string used_text(const ShareStatus& s);
// "SWAPPED: <container> 24.1 GiB in host memory since <time>, for <owner>; it resumes when the GPU
// has room for it" (a share whose processes burst.reclaim: swap checkpointed).
std::string swapped_text(const ShareStatus& s);
// request_bytes, limit_bytes and borrowed_bytes on a share's JSON, for a share with a burst limit.
void add_burst_json(nlohmann::json& share, const ShareStatus& s);

// The burst reclaimer as status shows it: its pid (0: none runs) and the node's burst.reclaim.
struct ReclaimerState {
  std::int64_t pid = 0;
  std::string policy;
};

// "reclaims": {reclaimer_pid, burst_reclaim, stopped, refused, events, flags, untold}, GPUs by index where
// the inventory knows them.
nlohmann::json reclaims_json(const reclaim::ReclaimLog& log, const Inventory& inv, const ReclaimerState& reclaimer);
// The text under the shares: whether the reclaimer runs (once a share has a burst limit), the
// reclaims, the flagged regions and the shares of one cgroup ("" when there is none of them).
std::string render_reclaims(const reclaim::ReclaimLog& log, const Inventory& inv, const ReclaimerState& reclaimer,
                            bool bursting);

// gpufrac_share_request_bytes, gpufrac_share_borrowed_bytes, gpufrac_share_reclaims_total,
// gpufrac_gpu_reclaims_total, gpufrac_gpu_reclaims_refused_total (share labels: `labels`).
std::vector<metrics::Family> burst_families(const StatusReport& r, const reclaim::ReclaimLog& log,
                                            metrics::Labels (*labels)(const LedgerEntry&));

}  // namespace gpufrac::cli
