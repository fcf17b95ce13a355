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

}  // namespace gpufrac::alloc_detail
