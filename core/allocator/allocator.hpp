// The allocator: Request + Inventory + live ledger entries -> Grant. Pure and deterministic
// (no I/O, no clock); the ledger calls it under its lock.
//
// Rules (docs/architecture.md "Allocation"):
//  - Shares (fraction < 1, or memory < the GPU's total) go on a GPU not in MIG mode, not used
//    whole, with fewer than max-shares-per-gpu shares (0 = unlimited), when reserved + request
//    <= total x overcommit. A fraction is fraction_bytes(total, f): whole MiB, rounded down.
//  - A share or whole GPU also books a compute weight (ppm of the GPU's time): gpufrac.io/compute,
//    else with allocation.compute managed its memory share (bytes x 10^6 / (total x overcommit),
//    rounded down, at least 1; a whole GPU 10^6), else none. A GPU fits only when the weights
//    booked on it plus this one stay within 10^6. compute-mode or priority with no weight to carry
//    them is refused, and keeps a request off MIG; on MIG gpufrac.io/compute is a size (SMs,
//    core/mig/mig_fit.hpp) and a MIG grant books no weight.
//  - binpack (default) picks the fullest GPU that fits (reserved / total, highest), so empty GPUs
//    stay whole; spread picks the emptiest. Ties go to the lowest index. Compute only filters.
//  - A whole GPU (fraction 1, or memory equal to the total) needs a GPU with no booking at all and
//    blocks every other booking there.
//  - gpufrac.io/gpu restricts every choice to that GPU (index or UUID). A CDI MIG device's pin
//    (GpuPin::mig_uuid) restricts a mig-profile request to that one instance.
//  - mig-profile takes an idle existing MIG device of that device profile ("3g.40gb", or a compute
//    instance "1c.3g.40gb"; no live booking on its UUID, capability device nodes present, its GPU
//    instance's memory left for the booking, not in a GPU instance whose compute instance the
//    requester holds), lowest GPU index, then GI, then CI; on dynamic-MIG GPUs the planner decides
//    (DynamicMig below).
//  - With mig-serves-fractions, a share that fits on no GPU may take the first idle MIG device in
//    mig_candidates order (core/mig/mig_fit.hpp): by memory alone the smallest whole instance that holds
//    it (a fraction f needs ceil(f x memory slices) slices, an amount memorySizeMB >= it); with
//    compute the fewest SMs, a compute instance of a split GPU instance included. Then lowest GPU,
//    GI, CI.
// A refusal is a user_error naming the numbers, e.g.
//   "no GPU has 10.0 GiB free: GPU 0 4.0 GiB, GPU 1 2.0 GiB",
//   "no GPU has 30 % of its time free for compute=30: GPU 0 20 %, GPU 1 0 %".
#pragma once

#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/mig/mig_fit.hpp"
#include "core/plan/grant.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

// Dynamic MIG (core/mig/mig_plan.hpp): which GPUs are dynamic, and the idle records of their
// instances. Without it every GPU is static. On a dynamic GPU in MIG mode the allocator hands out
// only what the planner's plan reuses (an idle recorded instance); a plan that creates or
// destroys instances is a refusal naming it, which the provisioner (gpufrac mig provision) acts
// on. Static GPUs come first: their idle instances are taken before a dynamic GPU is planned.
struct DynamicMig {
  const MigConfig* config = nullptr;
  const std::vector<MigIdleRecord>* idle = nullptr;
  bool dynamic(const Gpu& gpu) const;  // in MIG mode and dynamic by the config
};

// `holder`: who asks; a container gets at most one compute instance per GPU instance. `mps`: the
// ledger's GPUs in MPS mode (docs/architecture.md "SM sharing"): an SM share (compute-mode sm) goes
// only on a GPU in MPS mode (one with an SM share or a record) or on an empty GPU that
// compute.sm-sharing lets switch (compute capability 7.0 or newer), GPUs in MPS mode first; its
// compute is a percent of the SMs, the SM shares of a GPU at most 100 %. Time shares and whole
// GPUs never go on a GPU in MPS mode. A refusal names what each GPU is.
Result<Grant> allocate(const Request& request, const Inventory& inventory, const std::vector<LedgerEntry>& live,
                       const AllocationConfig& config, const DynamicMig& dynamic = {}, const MigHolder& holder = {},
                       const std::vector<MpsGpuRecord>& mps = {});

// Whether a request may be served by MIG at all: mig-profile, or a share (with mig-serves-fractions)
// without compute-mode or priority, which only the time-slicing arbiter honours (a MIG device owns
// its SMs: compute there is a size, docs/architecture.md "Compute share").
bool reaches_mig(const Request& request);

// Every grant of a request, one per GPU: allocate()'s one grant, or for a multi-GPU request
// (gpufrac.io/gpus: N > 1) the share on N distinct GPUs, all or none, in index order
// (allocator_multi.cpp). Each GPU is judged as a single-GPU share pinned there; GPUs in MIG mode
// never take part. The set: the pinned list (gpufrac.io/gpu: 0,2), else the GPUs whose links are
// closest, then by policy, then the lowest indices (core/allocator/topology_place.hpp). A refusal names the
// request and every GPU: "fraction=0.5 gpus=2 needs 2 GPUs and only 1 can take it: GPU 0 has room
// (20.3 GiB free), GPU 1 9.9 GiB free (needs 19.8 GiB)".
Result<std::vector<Grant>> allocate_gpus(const Request& request, const Inventory& inventory,
                                         const std::vector<LedgerEntry>& live, const AllocationConfig& config,
                                         const DynamicMig& dynamic = {}, const MigHolder& holder = {},
                                         const std::vector<MpsGpuRecord>& mps = {});

// True when creating a MIG instance could serve the request: a mig-profile request, or a share
// with mig-serves-fractions, that may use (pin included) a GPU in MIG mode that is dynamic.
// The hook and the wrapper then run the provisioner after a refusal.
bool dynamic_mig_applies(const Request& request, const Inventory& inventory, const AllocationConfig& allocation,
                         const MigConfig& mig);

}  // namespace gpufrac
