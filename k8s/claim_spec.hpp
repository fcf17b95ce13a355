// The transient CDI spec of one prepared claim: <cdi dir>/k8s.gpufrac.io-gpu_<claim uid>.yaml with
// one device, k8s.gpufrac.io/gpu=<claim uid>, carrying the same Edits as the wrapper's spec
// (core/plan/plan.hpp plan_spec_edits: device nodes, the preload file, the driver's files) and one
// createRuntime hook (`--claim <uid>`: the host-PID policy, the driver's limits on the pod's cgroup
// with `--driver-limit`, gpufrac's directory with the claim's limits file and accounting region,
// the loader cache). The claim's files live under <state-dir>/containers/<uid>@dra: every container
// of a pod that uses the claim shares its one limit and one region. A claim's name is never reused:
// the runtime's spec cache cannot hand out a stale one.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac::dra {

inline constexpr const char* kCdiKind = "k8s.gpufrac.io/gpu";
inline constexpr const char* kClaimInstance = gpufrac::kClaimInstance;

std::string claim_spec_path(const std::string& cdi_dir, const std::string& claim_uid);
std::string claim_cdi_id(const std::string& claim_uid);
std::string claim_files_key(const std::string& claim_uid);

// Writes the claim's files and its CDI spec (atomically) for its bookings.
Result<> write_claim_spec(const std::string& cdi_dir, const std::string& claim_uid,
                          const std::vector<LedgerEntry>& bookings, const Inventory& inventory, const Config& cfg);
// Removes both; what is already gone is not an error.
Result<> remove_claim_spec(const std::string& cdi_dir, const std::string& claim_uid, const Config& cfg);

}  // namespace gpufrac::dra
