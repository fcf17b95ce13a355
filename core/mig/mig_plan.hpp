// The dynamic MIG planner: which MIG device (a compute instance of a GPU instance) a request gets on
// a dynamic-MIG GPU. Pure: the inventory's instances, the live bookings, the idle records and the
// compute instances gpufrac made go in, a plan comes out (reuse an idle compute instance, add one
// to a GPU instance, or destroy some idle GPU instances and create one with its compute instance).
// The provisioner (nvml/mig_provision.hpp) carries a plan out through NVML; the allocator hands out
// reuse plans itself. Rules (docs/architecture.md "Dynamic MIG"):
//  - Shapes tried in the order of mig_candidates (core/mig/mig_fit.hpp). Per shape: an idle recorded
//    compute instance of it (GPU instances with a booking first, then lowest GPU, GI, CI); else,
//    for a compute instance smaller than its GPU instance, a new one in a GPU instance of that
//    profile with a free placement and the memory left (the same order); else a new GPU instance at
//    the best placement with the compute instance in it, destroying the fewest idle GPU instances
//    that make one possible (none when a placement is free); only when that fails on every GPU,
//    the next shape. A share (fraction, memory, compute) makes whole GPU instances only: it takes a
//    smaller compute instance only in a GPU instance that exists (split by a mig-profile request
//    that named one, by mig-parted or by hand). Memory: the compute instances of one GPU instance never book past its
//    memory.
//  - One compute instance per container per GPU instance: GPU instances the requester holds one of
//    are skipped (CUDA enumerates one compute instance per GPU instance).
//  - gpufrac never destroys a compute instance on its own: a GPU instance goes whole, when none of
//    its compute instances is booked. A GPU instance split into smaller compute instances goes only
//    when gpufrac made every one of them (`made`); one made by hand or by mig-parted stays.
//  - A GPU instance placement is possible when its memory slices overlap no remaining GPU instance,
//    the GPU holds fewer than the profile's max count of it, and the compute slices of all GPU
//    instances stay within the full profile's (7 on A100/H100).
//  - The best GPU instance placement leaves the most usable free memory slices: a free slice is
//    usable when some placement of some profile covering it is still free (1g@6 makes slice 7
//    unusable: only 2-, 4- and 8-slice placements reach it). Ties: 4-slice profiles that are not
//    the full GPU (3g, 4g) from the highest start, every other profile from the lowest.
//  - Between GPUs: the fewest instances destroyed, then the fewest usable slices lost, then the
//    fuller GPU (emptier GPUs stay whole for large profiles), then the lowest index.
//  - The best compute instance placement keeps the largest compute instance profile of its GPU
//    instance placeable, then the most placements free, then the lowest start (mig_ci_place.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/mig/mig_fit.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

enum class OccupantState {
  busy,        // a MIG device of it is booked
  idle,        // no booking, an idle record: may be handed out or destroyed
  unrecorded,  // no booking and no record (found idle, or being destroyed): may be destroyed
  blocked,     // a GPU instance gpufrac does not manage (no compute instance): never touched
};

// One compute instance (MIG device) of a GPU instance.
struct MigCiOccupant {
  std::uint32_t ci = 0;
  std::string uuid;
  std::uint32_t profile_id = 0;               // compute instance profile id
  std::uint32_t slices = 0;                   // compute slices
  std::uint32_t start = 0;                    // first compute slice inside the GPU instance
  OccupantState state = OccupantState::busy;  // busy, idle or unrecorded
  std::string holder;                         // busy: the container holding it
  std::uint64_t bytes = 0;                    // busy: the memory its booking holds of the GPU instance
  bool caps = false;                          // its capability device nodes are known
  bool made = false;                          // gpufrac made it (nvml/mig_made.hpp)
};

// One GPU instance and the MIG devices (compute instances) in it.
struct MigOccupant {
  std::uint32_t gi = 0;
  std::uint32_t profile_id = 0;
  std::string profile_name;
  MigPlacement placement;
  std::uint32_t compute_slices = 0;  // of its GPU instance profile
  std::vector<std::string> uuids;    // MIG-<uuid> of its compute instances, by ci
  std::vector<MigCiOccupant> cis;    // by ci
  OccupantState state = OccupantState::busy;
  std::string holder;            // busy: a container holding one of its compute instances
  std::int64_t idle_since = 0;   // idle: from the records
  bool held = false;             // the requester holds one of its compute instances
  bool split() const;            // a compute instance smaller than the GPU instance
  std::uint64_t booked() const;  // the memory its bookings hold
  // Idle or unrecorded, and not split into compute instances gpufrac did not make.
  bool destroyable() const;
};

// A GPU instance NVML reports that the inventory does not list (it has no compute instance).
struct MigForeign {
  std::uint32_t gi = 0;
  std::uint32_t profile_id = 0;
  MigPlacement placement;
};

// One dynamic GPU as the planner sees it.
struct MigGpuView {
  const Gpu* gpu = nullptr;
  std::vector<MigOccupant> occupants;  // by GI id
};

// `made`: the compute instances gpufrac made (their MIG-<uuid>s). `holder`: who asks (GPU
// instances it holds a compute instance of are marked held).
MigGpuView mig_view(const Gpu& gpu, const std::vector<LedgerEntry>& live, const std::vector<MigIdleRecord>& idle,
                    const std::vector<MigForeign>& foreign = {}, const std::vector<std::string>& made = {},
                    const MigHolder& holder = {});

struct MigDestroyStep {
  std::uint32_t gi = 0;
  std::string profile_name;
  MigPlacement placement;
  std::vector<std::string> uuids;
  bool operator==(const MigDestroyStep&) const = default;
};

struct MigCreateStep {
  std::uint32_t profile_id = 0;  // the GPU instance
  std::string profile_name;
  MigPlacement placement;
  std::optional<std::uint32_t> gi;  // set: the compute instance goes into this existing GPU instance
  // The compute instance: its slices (the GPU instance's for the full-size one), its profile id and
  // start when the GI profile's table is known (else NVML picks by slices and places it).
  std::uint32_t ci_slices = 0;
  std::optional<std::uint32_t> ci_profile_id;
  std::optional<std::uint32_t> ci_start;
  std::string device_profile;  // "1c.3g.40gb", or the GI profile for the full-size one
  bool operator==(const MigCreateStep&) const = default;
};

struct MigPlan {
  std::uint32_t gpu_index = 0;
  std::string gpu_uuid;
  std::string reuse_uuid;               // set: hand out this idle compute instance, nothing else to do
  std::vector<MigDestroyStep> destroy;  // otherwise: destroy these idle GPU instances, by GI id,
  MigCreateStep create;                 // then create this one
  std::uint64_t bytes = 0;              // what the booking takes of its GPU instance's memory
  std::string reason;                   // one line
  bool reuse() const { return !reuse_uuid.empty(); }
};

// The GI profiles of `gpu` a request's whole GPU instances may be, in the order they are tried.
std::vector<const MigProfile*> mig_candidate_profiles(const Request& request, const Gpu& gpu);

// The plan for `request` over `views` (the dynamic GPUs it may use, by index). A refusal is a
// user_error naming the GPUs and what stands in the way.
Result<MigPlan> plan_mig(const Request& request, const std::vector<MigGpuView>& views);

// Free memory slices of `gpu` that some profile placement not overlapping `occupied` covers.
std::uint32_t usable_free_slices(const Gpu& gpu, const std::vector<MigPlacement>& occupied);

// "1g.10gb@6": a profile at its first memory slice.
std::string placement_text(const std::string& profile, const MigPlacement& p);

}  // namespace gpufrac
