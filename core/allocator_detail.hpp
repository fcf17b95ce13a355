// Internal pieces of the allocator shared by allocator.cpp (GPU shares) and allocator_mig.cpp.
#pragma once

#include <vector>

#include "core/allocator.hpp"
#include "core/load.hpp"

namespace gpufrac::alloc_detail {

// GPUs the request may use (the pinned one, or all), by index.
using Candidates = std::vector<const Gpu*>;

// An existing MIG instance for a mig-profile request.
Result<Grant> mig_by_profile(const Request& request, const Candidates& gpus, const Load& load);
// The smallest idle MIG instance that holds a fraction/memory request (mig-serves-fractions).
Result<Grant> mig_for_share(const Request& request, const Candidates& gpus, const Load& load);
// The grant of a MIG instance (exclusive, its profile's memory).
Grant mig_grant(const Gpu& gpu, const MigInstance& instance, std::string reason);
// A CDI MIG device (GpuPin::mig_uuid): that instance or none; on a dynamic GPU it must also be
// recorded idle (an instance without a record may be being created or destroyed).
Result<Grant> mig_pinned(const Request& request, const Candidates& gpus, const Load& load, const DynamicMig& dynamic);
// The planner's answer on dynamic GPUs: the grant of a reused idle instance, or a refusal saying
// what the provisioner would create (allocator_dynamic.cpp).
Result<Grant> mig_dynamic(const Request& request, const Candidates& gpus, const std::vector<LedgerEntry>& live,
                          const DynamicMig& dynamic);

}  // namespace gpufrac::alloc_detail
