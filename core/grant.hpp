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
  bool operator==(const Grant&) const = default;
};

}  // namespace gpufrac
