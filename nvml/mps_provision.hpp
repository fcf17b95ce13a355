// The SM-sharing provisioner (docs/architecture.md "SM sharing"): books a request and makes sure the
// MPS daemon of its GPU runs. `gpufrac mps provision` runs it for the static hook and wrapper (which
// cannot load NVML); gpufrac-dra calls it in process. Order:
//  1. daemons idle past compute.mps-idle-timeout are stopped (GPUs they held go back to time
//     sharing). A time share comes here when a GPU idle in MPS mode (no SM share left) kept it out:
//     it is booked as usual, and while it is refused the idle GPUs go back to time sharing at once,
//     one at a time (lowest index first), the booking tried again after each;
//  2. the ordinary reservation: the allocator puts an SM share on a GPU in MPS mode or an empty GPU
//     that may switch, and the same ledger transaction records a GPU that switches (ledger "mps"), so
//     no time share lands there meanwhile;
//  3. for an SM share: the GPU's daemon made sure of (nvml/mps_keeper.hpp). When that fails the
//     booking made in step 2 is released again, and the error is the answer.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger.hpp"

namespace gpufrac {

struct MpsProvisionResult {
  Booking booking;
  std::vector<std::string> notes;  // daemons started, stopped, recovered
};

Result<MpsProvisionResult> provision_mps(const Config& cfg, const ReserveArgs& args, const Inventory& inv);

}  // namespace gpufrac
