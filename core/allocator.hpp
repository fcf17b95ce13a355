// The allocator: Request + Inventory + live ledger entries -> Grant. Pure and deterministic
// (no I/O, no clock); the ledger calls it under its lock.
//
// Rules (docs/architecture.md "Allocation"):
//  - Shares (fraction < 1, or memory < the GPU's total) go on a GPU not in MIG mode, not used
//    whole, with fewer than max-shares-per-gpu shares (0 = unlimited), when reserved + request
//    <= total x overcommit. A fraction is fraction_bytes(total, f): whole MiB, rounded down.
//  - binpack (default) picks the fullest GPU that fits (reserved / total, highest), so empty GPUs
//    stay whole; spread picks the emptiest. Ties go to the lowest index.
//  - A whole GPU (fraction 1, or memory equal to the total) needs a GPU with no booking at all and
//    blocks every other booking there.
//  - gpufrac.io/gpu restricts every choice to that GPU (index or UUID). A CDI MIG device's pin
//    (GpuPin::mig_uuid) restricts a mig-profile request to that one instance.
//  - mig-profile takes an idle existing instance of that profile (no live booking on its UUID,
//    capability device nodes present), lowest GPU index, then GI, then CI.
//  - With mig-serves-fractions, a share that fits on no GPU may take the smallest idle instance
//    that holds it: a fraction f needs ceil(f x memory slices of the GPU) slices (compare slices,
//    then memory); a memory amount needs the profile's memory (memorySizeMB) >= the amount
//    (compare memory, then slices). Then fewer compute slices, lowest GPU, GI, CI.
// A refusal is a user_error naming the numbers, e.g.
//   "no GPU has 10.0 GiB free: GPU 0 4.0 GiB, GPU 1 2.0 GiB".
#pragma once

#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/grant.hpp"
#include "core/ledger_entry.hpp"
#include "core/request.hpp"
#include "nvml/inventory.hpp"

namespace gpufrac {

Result<Grant> allocate(const Request& request, const Inventory& inventory, const std::vector<LedgerEntry>& live,
                       const AllocationConfig& config);

}  // namespace gpufrac
