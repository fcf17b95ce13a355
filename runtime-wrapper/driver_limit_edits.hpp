// gpufrac-runtime's part in driver-enforced memory limits (docs/architecture.md "Driver-enforced
// memory limits"): it books before the container's process exists, so the limits are set by its
// createRuntime attach hook, told by `--driver-limit` when the bookings call for them (pure, from
// the inventory cache and the node's cgroup layout; enforcement: driver refuses here a share the
// driver cannot hold); and NVIDIA_GPU_MEMORY_LIMIT/REQUEST in the spec get gpufrac's values, so
// NVIDIA's own hook sets the same limit (core/enforcement/nvidia_memory_env.hpp).
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/plan/edits.hpp"

namespace gpufrac::wrapper {

// Adds the NVIDIA variables to `edits` and "--driver-limit" to the attach hook's arguments.
Result<> add_driver_limit_edits(Edits& edits, std::vector<std::string>& attach_args,
                                const std::vector<LedgerEntry>& bookings, const Inventory& inventory, const Config& cfg,
                                const std::vector<std::string>& spec_env);

}  // namespace gpufrac::wrapper
