// Internal pieces of the allocator shared by allocator.cpp (GPU shares) and allocator_mig.cpp.
#pragma once

#include <vector>

#include "core/allocator/allocator.hpp"
#include "core/allocator/load.hpp"
#include "core/mig/mig_fit.hpp"

namespace gpufrac::alloc_detail {

// GPUs the request may use (the pinned one, or all), by index.
using Candidates = std::vector<const Gpu*>;

// How one GPU stands against a share or whole-GPU request (allocator.cpp decides, allocator_fit.cpp
// words a refusal).
struct ShareFit {
  const Gpu* gpu = nullptr;
  bool ok = false;
  bool whole = false;
  std::uint64_t bytes = 0;  // what the request takes on this GPU
  std::uint64_t free = 0;   // capacity - reserved
  std::uint64_t reserved = 0;
  std::uint32_t compute = 0;       // ppm of the GPU's time the request books here (0: none)
  std::uint32_t compute_free = 0;  // ppm not booked yet
  std::string why_not;             // set when the GPU is unusable for a reason other than free memory or time
  bool sm_mode = false;            // the GPU is in MPS mode (SM shares: docs/architecture.md "SM sharing")
  bool memory_fits() const { return whole || bytes <= free; }
  bool compute_fits() const { return compute <= compute_free; }
};

// How g stands against a share or whole-GPU request (r's pin is not looked at), and the grant of a
// GPU that fits (allocator.cpp).
ShareFit evaluate_share(const Gpu& g, const Request& r, const DeviceLoad& d, const AllocationConfig& cfg);
Grant share_grant(const ShareFit& f, const Request& r, std::string reason);
// Every GPU of the node by index; the GPU a pin names, or the one-line refusal naming the pin.
Candidates gpus_by_index(const Inventory& inv);
Result<const Gpu*> pinned_gpu(const GpuPin& pin, const Inventory& inv);
// "0-7", or "0, 2" when the indices are not contiguous.
std::string index_list(const Inventory& inv);

// The compute a share or whole GPU of `bytes` books on g: the request's own, else by
// allocation.compute its memory share (default_compute_ppm of g's capacity; a whole GPU all of it)
// or none.
std::uint32_t share_compute_ppm(const Request& r, const Gpu& g, std::uint64_t bytes, bool whole,
                                const AllocationConfig& cfg);
// compute-mode or priority with nothing to carry them (allocation.compute unmanaged and no
// gpufrac.io/compute): refused rather than dropped.
Result<> check_compute_intent(const Request& r, const AllocationConfig& cfg);
// The one-line refusal when no GPU fits: by memory as before compute shares where memory is short,
// by the GPU's time where only that is, both named where GPUs differ.
std::string share_refusal(const Request& r, const std::vector<ShareFit>& fits, bool pinned);
// What keeps g from an SM share (or a time share from g in MPS mode), "" when nothing does
// (allocator_sm.cpp): "GPU 0 is time-sliced (2 shares)", "GPU 1 is in SM mode (MPS, 1 SM share)".
std::string sm_why_not(const Gpu& g, const Request& r, const DeviceLoad& d, const AllocationConfig& cfg);
// The one-line refusal of an SM share: what each GPU is ("GPU 1 is in SM mode with 20 % of its SMs
// free", "GPU 0 is time-sliced (1 share)", memory as for any share).
std::string sm_refusal(const Request& r, const std::vector<ShareFit>& fits, bool pinned);

// What the MIG choices read besides the request: the bookings, the dynamic GPUs, who asks.
struct MigContext {
  const Load& load;
  const std::vector<LedgerEntry>& live;
  const DynamicMig& dynamic;
  const MigHolder& holder;
};

// An existing MIG device (compute instance) for a mig-profile request.
Result<Grant> mig_by_profile(const Request& request, const Candidates& gpus, const MigContext& ctx);
// The first idle MIG device in mig_candidates order that holds a share (mig-serves-fractions).
Result<Grant> mig_for_share(const Request& request, const Candidates& gpus, const MigContext& ctx);
// The grant of a MIG device: exclusive, `bytes` of its GPU instance's memory (all of it for the
// full-size compute instance).
Grant mig_grant(const Gpu& gpu, const MigInstance& instance, std::uint64_t bytes, std::string reason);
// A CDI MIG device (GpuPin::mig_uuid): that instance or none; on a dynamic GPU it must also be
// recorded idle (an instance without a record may be being created or destroyed).
Result<Grant> mig_pinned(const Request& request, const Candidates& gpus, const MigContext& ctx);
// The planner's answer on dynamic GPUs: the grant of a reused idle instance, or a refusal saying
// what the provisioner would create (allocator_dynamic.cpp).
Result<Grant> mig_dynamic(const Request& request, const Candidates& gpus, const MigContext& ctx);

}  // namespace gpufrac::alloc_detail
