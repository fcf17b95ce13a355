// The limit file of one container (limits_abi.h, item 1), host side: the hook, the runtime
// wrapper and the CDI hook render it; `gpufrac status` and tests parse it with the shim's own
// grammar (shim/config_parse.c), so host and shim can never disagree on a file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/plan/grant.hpp"

namespace gpufrac::limits {

struct DeviceLimit {
  std::string uuid;         // "GPU-..." or "MIG-..."
  std::uint64_t bytes = 0;  // the limit
  // The compute share (a "compute" line when compute_ppm > 0): weight in ppm of the GPU's time.
  std::uint32_t compute_ppm = 0;
  ComputeMode compute_mode = ComputeMode::fair;
  ComputePriority priority = ComputePriority::normal;
  // The container's slot in the GPU's compute arbiter (an "arbiter <uuid> <token>" line after the
  // compute line; arbiter_abi.h): set by the host when it sets the slot up, 0 = none.
  std::uint64_t compute_token = 0;
  // Burstable memory (a "burst <uuid> <request>" line after the device line when request > 0; bytes
  // is then the limit above it), and gpufrac.io/on-limit: wait (a "wait <uuid> <ms>" line).
  std::uint64_t request = 0;
  std::uint32_t wait_ms = 0;
  // An SM share (docs/architecture.md "SM sharing"): an "mps <uuid> <percent>" line after the device
  // line, the percent of the SMs the container's MPS clients may use (the shim's process setup
  // reads it; the shim's grammar ignores it otherwise). 0 = none. Not parsed back.
  std::uint32_t sm_ppm = 0;
  bool operator==(const DeviceLimit&) const = default;
};

struct LimitFile {
  std::string container;             // informational: the container id
  std::string region;                // the usage region's path as the container sees it
  std::vector<DeviceLimit> devices;  // at most GPUFRAC_MAX_DEVICES; index = used[] index in the region
  bool operator==(const LimitFile&) const = default;
};

// "version 1\ncontainer <id>\nregion <path>\ndevice <uuid> <bytes>\n..." and, for each device with a
// compute share, "compute <uuid> <weight ppm> <fair|strict> <normal|high>" after its device line, then
// "arbiter <uuid> <token: 16 hex digits>" when it has an arbiter slot, "burst <uuid> <request bytes>"
// for a limit above the request and "wait <uuid> <ms>" for on-limit: wait. Control characters in
// the container id or region path are replaced by '?' so the text is always one line per key.
std::string render_limit_file(const LimitFile& file);

// Parses a limit file; errors name the line and the accepted form ("limit file: line 3: ...").
Result<LimitFile> parse_limit_file(std::string_view text);

// Reads and parses path.
Result<LimitFile> read_limit_file(const std::string& path);

}  // namespace gpufrac::limits
