// Which MIG devices (core/mig/mig_device.hpp shapes) a request may take, in the order they are tried,
// and what each books of its GPU instance's memory (docs/architecture.md "Dynamic MIG"). Pure;
// shared by the allocator (existing instances) and the dynamic MIG planner.
//  - mig-profile: exactly the named shape ("3g.40gb" is the whole GPU instance, "1c.3g.40gb" one
//    compute slice of it). A smaller compute instance books gpufrac.io/memory when the request
//    gives it, else the equal split (GI memory x C / G); the whole GPU instance books its memory.
//  - fraction or memory without gpufrac.io/compute: whole GPU instances only, as before compute
//    instances: a fraction f needs ceil(f x memory slices) slices (fewest slices, then memory, then
//    compute slices); an amount needs memorySizeMB >= it (least memory, then slices, then compute).
//  - with gpufrac.io/compute: every shape with at least multiprocessors_for(compute) SMs whose GI
//    holds the memory (a whole GPU instance by the rule above; a smaller compute instance books the
//    request's amount, or fraction x the GPU's memory, of its GI's memory). Order: fewest SMs (the
//    compute the request wastes), then the GI's memory, memory slices and compute slices (the memory
//    it wastes), a whole GPU instance before a compute instance of a larger one. The planner makes
//    whole GPU instances only for such a request: a smaller compute instance it takes only in a GPU
//    instance that exists (core/mig/mig_plan.hpp).
//  - Plain GI profiles before attributed ones (+me, -me, +gfx), in every order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ledger/ledger_entry.hpp"
#include "core/mig/mig_device.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

struct MigCandidate {
  MigShape shape;
  std::uint64_t bytes = 0;  // what a booking of it takes of its GI's memory
};

// The shapes of `gpu` the request may take, in the order they are tried (rules above).
std::vector<MigCandidate> mig_candidates(const Request& request, const Gpu& gpu);

// Whether the request may take a compute instance smaller than its GPU instance.
bool takes_compute_instances(const Request& request);

// The memory the live bookings hold of one GPU instance (entries on its compute instances).
std::uint64_t gi_booked_bytes(const std::vector<LedgerEntry>& live, const std::string& gpu_uuid, std::uint32_t gi);

// The GPU instances (GPU uuid, GI id) a container instance already holds a compute instance of: it
// gets at most one per GPU instance (CUDA enumerates one compute instance per GPU instance).
struct MigHolder {
  std::string container_id;
  std::string instance;
  bool claim = false;  // a DRA claim's bookings (container_id = the claim's uid)
  bool empty() const { return container_id.empty(); }
};
std::vector<std::pair<std::string, std::uint32_t>> held_gpu_instances(const std::vector<LedgerEntry>& live,
                                                                      const MigHolder& holder);

}  // namespace gpufrac
