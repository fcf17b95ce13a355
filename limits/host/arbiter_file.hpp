// The compute arbiter of one GPU (gpufrac/arbiter_abi.h), host side: its two files (the slots file
// <path>.slots, read-only in containers, and the lease file <path>) created fully allocated before
// the first container with a compute share on the GPU starts, a slot set up per container at booking
// and freed at release, read (with the checks that tell a tampered lease file) by `gpufrac status`
// and `gpufrac metrics`, swept by `gpufrac gc`. Every function takes the lease file's path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/plan/grant.hpp"
#include "limits/host/arbiter_lease.hpp"

namespace gpufrac::limits {

// The slots file of the arbiter whose lease file is path.
std::string arbiter_slots_path(const std::string& path);

// Creates the slots file (mode 0644) and the lease file path (mode 0666, so a non-root container user
// can map it read-write) for gpu_uuid unless they are there: each written in a temporary file, fully
// allocated (posix_fallocate: a full tmpfs fails here, in one line, never as a SIGBUS in a
// container), then linked in place. A slots file that is not valid is replaced (containers that
// mapped it keep their copy). A lease file that is there is put back as the host made it, in place
// (limits/host/arbiter_lease.hpp: size, mode, owner, header; the containers of the GPU keep one
// arbiter; never mapped by the host), and the repair is noted in the slots file. Returns what was
// repaired (the caller logs it).
Result<LeaseRepair> ensure_arbiter(const std::string& path, const std::string& gpu_uuid);

// Sets up the container's slot (the one already holding key, which keeps its token, or a free one
// with a fresh random token): key, weight, mode and priority. Returns the token for the limit file's
// arbiter line.
Result<std::uint64_t> attach_arbiter_slot(const std::string& path, const std::string& key, std::uint32_t weight_ppm,
                                          ComputeMode mode, ComputePriority priority);

// Frees every slot of key. A missing arbiter frees nothing. Returns the slots freed.
Result<unsigned> release_arbiter_slots(const std::string& path, const std::string& key);

struct ArbiterSlotView {
  unsigned index = 0;
  std::string key;
  std::uint32_t weight_ppm = 0;
  ComputeMode mode = ComputeMode::fair;
  ComputePriority priority = ComputePriority::normal;
  bool active = false;           // ACTIVE (else SETUP: a host process was killed half-way)
  std::uint64_t created_s = 0;   // CLOCK_REALTIME seconds
  std::uint64_t window_ns = 0;   // charged in the last GPUFRAC_ARBITER_WINDOW_S whole seconds
  std::uint64_t charged_ns = 0;  // ever
  std::uint64_t leases = 0;      // ever
  // window_ns over the window: the share's achieved compute, in ppm of the GPU's time (0..1000000).
  std::uint32_t achieved_ppm() const;
};

struct ArbiterView {
  std::string gpu_uuid;
  std::vector<ArbiterSlotView> slots;  // slots in use, by index
  std::uint32_t holder = 0;            // slot + 1 holding or designated the lease, 0 none
  bool claimed = false;
  std::uint32_t holder_pid = 0;  // informational
  // What no shim following the protocol writes into the lease file (arbiter_abi.h), one line each:
  // a header overwritten, a holder or preemption request naming no slot or a slot that cannot make
  // it, a deadline or busy end farther ahead than any process announces, charges beyond the time
  // that passed. Empty for an arbiter nobody tampered with. Its slots' figures are then not shown.
  std::vector<std::string> tampered;
};

// Reads the arbiter without writing (the lease file by pread into a bounded copy, never mapped: a
// tenant may resize it meanwhile); the history window is taken at now_ns (CLOCK_MONOTONIC; 0: now).
// A valid slots file with a tampered lease file reads (tampered says how: also a lease file of
// another size, mode or owner than the host made, and a repair by the host in the last
// kLeaseRepairShownS), a missing or invalid slots file is an error.
Result<ArbiterView> read_arbiter(const std::string& path, std::uint64_t now_ns = 0);

// How long after the host repaired a lease file `gpufrac status` still flags the GPU.
constexpr std::uint64_t kLeaseRepairShownS = 600;

struct ArbiterSweep {
  std::vector<std::string> freed;     // keys whose slots were freed
  bool removed = false;               // no slot left in use: both files removed
  std::vector<std::string> repaired;  // what was put back in the lease file (when not removed)
};

// gc: frees the slots whose key is not in keep and that were set up more than min_age_s ago (slots
// of bookings that are gone, and SETUP slots a killed host process left); then removes the arbiter
// when no slot is left in use (whatever a tenant did to its lease file: a grown file does not
// outlive the GPU's shares), else repairs its lease file in place.
Result<ArbiterSweep> sweep_arbiter(const std::string& path, const std::vector<std::string>& keep,
                                   std::uint64_t min_age_s);

}  // namespace gpufrac::limits
