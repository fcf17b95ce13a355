// The compute instances gpufrac made on a dynamic-MIG GPU: <state-dir>/mig-<gpu uuid>.made, one
// JSON object {"compute_instances": ["MIG-...", ...]}, changed only by the holder of the GPU's MIG
// lock (mig_session.hpp) and replaced atomically. A GPU instance split into compute instances is
// destroyed only when gpufrac made every one of them (core/mig/mig_plan.hpp): the ones mig-parted or
// an operator made stay. A compute instance made but not yet written here is named by the journal
// (mig_steps.hpp), whose recovery adds it.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac {

std::string mig_made_path(const Config& cfg, const std::string& gpu_uuid);
// The MIG UUIDs; none when the file does not exist. A damaged file is an error naming it.
Result<std::vector<std::string>> read_mig_made(const Config& cfg, const std::string& gpu_uuid);
// Adds UUIDs (once each).
Result<> add_mig_made(const Config& cfg, const std::string& gpu_uuid, const std::vector<std::string>& uuids);
// Drops the UUIDs the GPU no longer has (destroyed); returns what is left.
Result<std::vector<std::string>> prune_mig_made(const Config& cfg, const Gpu& gpu);

}  // namespace gpufrac
