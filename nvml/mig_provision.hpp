// The dynamic MIG provisioner: books a request on a dynamic-MIG GPU, creating the instance the
// planner (core/mig/mig_plan.hpp) asks for. `gpufrac mig provision` runs it for the static hook (which
// cannot load NVML); dynamic programs may call it in-process. Order:
//  1. the ordinary reservation (an idle instance may be there by now): done if it books;
//  2. the target GPU from the planner; its MIG lock; NVML opened; a journal left by a killed
//     provisioner recovered; the GPU's instances read back from NVML;
//  3. ledger: idle records brought in line (instances with neither booking nor record adopted);
//     the ordinary reservation again (it may reuse an adopted instance);
//  4. ledger: the plan on this GPU, with recorded instances idle past mig.idle-timeout counted as
//     gone (they are destroyed too); the records of every instance to destroy are dropped in the
//     same transaction, so no other front-end can book one while it goes;
//  5. NVML: destroy, then create under the journal; inventory cache refreshed, `on_changed` told
//     (the CLI rewrites the CDI spec);
//  6. ledger: the new instance booked for the container.
// A process killed anywhere leaves the ledger whole and at worst an unrecorded idle instance
// (adopted by the next run) or a journaled GPU instance without compute instance (destroyed by the
// next run or gpufrac gc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger.hpp"
#include "core/mig/mig_plan.hpp"

namespace gpufrac {

struct ProvisionResult {
  Booking booking;
  std::vector<MigDestroyStep> destroyed;
  std::optional<MigCreateStep> created;
  std::vector<std::string> notes;  // journal recovery, warnings (CDI spec not written, ...)
};

Result<ProvisionResult> provision_mig(const Config& cfg, const ReserveArgs& args, const InventoryListener& on_changed);

}  // namespace gpufrac
