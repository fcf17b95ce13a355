// What the allocator decided for one request: a GPU (a share of it, or all of it) or a MIG
// instance, the bytes the shim enforces, and why. Plain data; the ledger records it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpufrac {

// A MIG device: GPU instance, compute instance and the GI profile name.
struct MigRef {
  std::uint32_t gi = 0;
  std::uint32_t ci = 0;
  std::string profile;
  bool operator==(const MigRef&) const = default;
};

// A compute share (docs/architecture.md "Compute share"): how the GPU's time is shared.
// fair: work-conserving (idle time goes to the busy in proportion to their weights); strict: never
// more than the share. high priority: batch work stops being admitted at its next kernel boundary
// while it has work (it is still charged). sm: not a time share but an SM share (docs/architecture.md
// "SM sharing"): the container is an MPS client capped at compute_ppm of the GPU's SMs, its kernels
// running at once with the other SM shares of a GPU in MPS mode; no arbiter, no time-slicing.
enum class ComputeMode { fair, strict, sm };
enum class ComputePriority { normal, high };
const char* to_string(ComputeMode m);
const char* to_string(ComputePriority p);

// Parts per million of a GPU's time (1'000'000 = all of it), the unit of compute bookings.
inline constexpr std::uint32_t kWholeGpuComputePpm = 1'000'000;

struct Grant {
  std::string device_uuid;  // GPU-<uuid> for a share or whole GPU, MIG-<uuid> for an instance
  std::uint32_t gpu_index = 0;
  std::string gpu_uuid;  // the physical GPU (the parent for MIG)
  std::optional<MigRef> mig;
  // The shim's limit: fraction_bytes() of the GPU for a fraction, the amount for memory, the
  // instance memory for MIG, the GPU's total for a whole GPU.
  std::uint64_t bytes = 0;
  bool exclusive = false;  // a whole GPU or a MIG instance: nobody else is placed there
  std::string reason;      // one line, e.g. "binpack: GPU 1 is the fullest GPU with room"
  // The compute share booked with it: its weight in ppm of the GPU's time, 0 = unmanaged (no
  // arbiter: the GPU's own time-slicing, as before compute shares).
  std::uint32_t compute_ppm = 0;
  ComputeMode compute_mode = ComputeMode::fair;
  ComputePriority priority = ComputePriority::normal;
  // Burstable memory (docs/architecture.md "Burstable memory"): the most the share may use, above
  // `bytes` (what is booked: its request), while the GPU has memory no request holds; 0 = bytes is
  // the limit. wait_ms: gpufrac.io/on-limit: wait, its timeout (0: an allocation past the limit fails).
  std::uint64_t limit_bytes = 0;
  std::uint32_t wait_ms = 0;
  // The shim's limit: the burst limit, else the booking.
  std::uint64_t limit() const { return limit_bytes != 0 ? limit_bytes : bytes; }
  bool operator==(const Grant&) const = default;
};

// An SM share (ComputeMode::sm, compute_ppm = its percent of the SMs) takes no arbiter slot and no
// "compute" line; a time share (fair or strict) does.
inline bool is_sm_share(std::uint32_t compute_ppm, ComputeMode mode) {
  return compute_ppm != 0 && mode == ComputeMode::sm;
}
inline bool is_time_share(std::uint32_t compute_ppm, ComputeMode mode) {
  return compute_ppm != 0 && mode != ComputeMode::sm;
}

}  // namespace gpufrac
