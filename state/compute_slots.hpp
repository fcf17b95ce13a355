// The containers' slots in the GPUs' compute arbiters (include/gpufrac/arbiter_abi.h, "Slots"):
// set up where the limit file and usage region are written (write_container_files, on every
// front-end's path) and freed where they are removed (remove_container_files: poststop, a rolled
// back start, `gpufrac gc`).
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "limits/host/limit_file.hpp"

namespace gpufrac {

// For each device of the limit file with a compute share smaller than the whole GPU (a whole GPU is
// never arbitrated: no slot, no arbiter line): mounts the GPU's arbiter directory (its own
// size-limited tmpfs; one already there is reused) and creates the GPU's arbiter if needed
// (fully allocated: a full state directory refuses here, in one line) and sets up the container's
// slot, recording its token in the device's compute_token (the limit file's arbiter line).
Result<> attach_compute_slots(const Config& cfg, const std::string& container_key, limits::LimitFile& file);

// The lease file of every arbiter under <state-dir>/compute: <uuid>.d/<uuid> (on the GPU's own
// tmpfs, state/compute_mount.hpp), and a plain <uuid> of the layout before it.
std::vector<std::string> compute_arbiters(const Config& cfg);

// Frees the container's slots in every arbiter under <state-dir>/compute. Returns how many.
Result<unsigned> release_compute_slots(const Config& cfg, const std::string& container_key);

struct ComputeSweep {
  std::vector<std::string> freed;     // keys whose slots were freed
  std::vector<std::string> removed;   // GPU uuids whose arbiter was removed (no share left on it)
  std::vector<std::string> repaired;  // "<uuid>: <what>" per repair of a lease file a container changed
};

// gc: frees the slots of keys without a booking (set up more than min_age_s ago), in every
// arbiter; removes the arbiters of GPUs with no slot left in use (and unmounts their tmpfs) and repairs the others'
// lease files in place (limits/host/arbiter_file.hpp sweep_arbiter).
Result<ComputeSweep> sweep_compute_slots(const Config& cfg, const std::vector<std::string>& booked,
                                         std::uint64_t min_age_s);

}  // namespace gpufrac
