// The dynamic MIG planner: which MIG instance a request gets on a dynamic-MIG GPU. Pure: the
// inventory's instances, the live bookings and the idle records go in, a plan comes out
// (reuse an idle instance, or destroy some idle GPU instances and create one). The provisioner
// (nvml/mig_provision.hpp) carries a plan out through NVML; the allocator hands out reuse plans
// itself. Rules (docs/architecture.md "Dynamic MIG"):
//  - Profiles tried, in order: a mig-profile request its own profile only; a fraction f the
//    profiles with at least ceil(f x memory slices) memory slices (fewest slices, then memory,
//    then compute slices); a memory amount the profiles whose memorySizeMB holds it (least
//    memory, then slices, then compute slices). Plain profiles (no +me, -me, +gfx attribute)
//    before attributed ones; a mig-profile request names its profile, attributes included.
//  - Per profile: an idle recorded instance of it (lowest GPU, then GI); else a new instance at
//    the best placement, destroying the fewest idle GPU instances that make one possible
//    (none when a placement is free); only when that fails on every GPU, the next profile.
//  - A placement is possible when its memory slices overlap no remaining GPU instance, the GPU
//    holds fewer than the profile's max count of it, and the compute slices of all GPU instances
//    stay within the full profile's (7 on A100/H100).
//  - The best placement leaves the most usable free memory slices: a free slice is usable when
//    some placement of some profile covering it is still free (1g@6 makes slice 7 unusable: only
//    2-, 4- and 8-slice placements reach it). Ties: 4-slice profiles that are not the full GPU
//    (3g, 4g) from the highest start, every other profile from the lowest.
//  - Between GPUs: the fewest instances destroyed, then the fewest usable slices lost, then the
//    fuller GPU (emptier GPUs stay whole for large profiles), then the lowest index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/inventory.hpp"
#include "core/ledger_entry.hpp"
#include "core/request.hpp"

namespace gpufrac {

enum class OccupantState {
  busy,        // a MIG device of it is booked
  idle,        // no booking, an idle record: may be handed out or destroyed
  unrecorded,  // no booking and no record (found idle, or being destroyed): may be destroyed
  blocked,     // a GPU instance gpufrac does not manage (no compute instance): never touched
};

// One GPU instance and the MIG devices (compute instances) in it.
struct MigOccupant {
  std::uint32_t gi = 0;
  std::uint32_t profile_id = 0;
  std::string profile_name;
  MigPlacement placement;
  std::uint32_t compute_slices = 0;  // of its GPU instance profile
  std::vector<std::string> uuids;    // MIG-<uuid> of its compute instances, by ci
  OccupantState state = OccupantState::busy;
  std::string holder;           // busy: the container holding it
  std::int64_t idle_since = 0;  // idle: from the record
  bool reusable = false;        // idle, with one compute instance whose capability nodes are known
  bool destroyable() const { return state == OccupantState::idle || state == OccupantState::unrecorded; }
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

MigGpuView mig_view(const Gpu& gpu, const std::vector<LedgerEntry>& live, const std::vector<MigIdleRecord>& idle,
                    const std::vector<MigForeign>& foreign = {});

struct MigDestroyStep {
  std::uint32_t gi = 0;
  std::string profile_name;
  MigPlacement placement;
  std::vector<std::string> uuids;
  bool operator==(const MigDestroyStep&) const = default;
};

struct MigCreateStep {
  std::uint32_t profile_id = 0;
  std::string profile_name;
  MigPlacement placement;
  bool operator==(const MigCreateStep&) const = default;
};

struct MigPlan {
  std::uint32_t gpu_index = 0;
  std::string gpu_uuid;
  std::string reuse_uuid;               // set: hand out this idle instance, nothing else to do
  std::vector<MigDestroyStep> destroy;  // otherwise: destroy these idle GPU instances, by GI id,
  MigCreateStep create;                 // then create this one with its full-size compute instance
  std::string reason;                   // one line
  bool reuse() const { return !reuse_uuid.empty(); }
};

// The profiles of `gpu` a request may take, in the order they are tried (rules above).
std::vector<const MigProfile*> mig_candidate_profiles(const Request& request, const Gpu& gpu);

// The plan for `request` over `views` (the dynamic GPUs it may use, by index). A refusal is a
// user_error naming the GPUs and what stands in the way.
Result<MigPlan> plan_mig(const Request& request, const std::vector<MigGpuView>& views);

// Free memory slices of `gpu` that some profile placement not overlapping `occupied` covers.
std::uint32_t usable_free_slices(const Gpu& gpu, const std::vector<MigPlacement>& occupied);

// "1g.10gb@6": a profile at its first memory slice.
std::string placement_text(const std::string& profile, const MigPlacement& p);

}  // namespace gpufrac
