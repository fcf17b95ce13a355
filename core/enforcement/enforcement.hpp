// Who holds a share's memory limit: the pure decisions of "Driver-enforced memory limits"
// (docs/architecture.md). Per GPU, from the config's `enforcement`, the inventory (does the driver
// set per-cgroup limits on the GPU; MIG mode) and the node's cgroup layout; per booking, the limit
// the driver is asked to hold: hard = the share's limit (the shim's limit: its burst limit, else the
// booking's bytes), soft = its memory guaranteed (the booking's bytes, its request, divided by
// allocation.overcommit where memory is overcommitted, so the guarantees of a GPU never add up past
// its memory). Whole GPUs and MIG instances get none: nobody
// shares them (a MIG instance is partitioned in hardware, and the driver refuses MIG handles).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/enforcement/cgroup_v2.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

// What holds the shares of one GPU: the driver (and, always, the shim too), the shim alone, MIG
// (the GPU is in MIG mode: its instances are hardware partitions), or nothing: enforcement: driver
// refuses shares the driver cannot hold.
enum class Holder { driver, shim, mig, refused };
const char* to_string(Holder h);

struct GpuEnforcement {
  Holder holder = Holder::shim;
  std::string why;  // one line, e.g. "driver 550.54.15 has no per-cgroup memory limits (r615+)"
};

GpuEnforcement gpu_enforcement(const Gpu& gpu, const Inventory& inv, CgroupLayout layout, const Config& cfg);

// What holds one booking now: the driver where its entry records a limit, MIG for an instance,
// else the shim.
Holder share_holder(const LedgerEntry& e);

// A booking's driver limit, planned.
struct PlannedLimit {
  std::string device_key;
  std::string gpu_uuid;
  std::uint32_t gpu_index = 0;
  DriverLimit limit;
};

// The memory a share of `bytes` is guaranteed: the bytes, divided by overcommit when memory is
// overcommitted.
std::uint64_t guaranteed_bytes(std::uint64_t bytes, double overcommit);

// Whether a booking is a share the driver could hold (on a GPU, not the whole of it).
bool is_share(const LedgerEntry& e);

// The limits for a container's (or claim's) bookings on cgroup directory `cgroup`: one per share
// on a GPU whose holder is the driver, none where the shim holds it. Under enforcement: driver, a
// share the driver cannot hold is a user error naming the GPU and why; nothing is planned then.
Result<std::vector<PlannedLimit>> plan_driver_limits(const std::vector<LedgerEntry>& bookings, const Inventory& inv,
                                                     CgroupLayout layout, const Config& cfg, const std::string& cgroup);

// Whether the front-ends plan driver limits at all: enforcement: driver, or auto with a GPU whose
// driver sets them (so a node without the feature pays nothing: no cgroup read, no helper run).
bool driver_limits_considered(const Inventory& inv, const Config& cfg);

}  // namespace gpufrac
