// The steps of a dynamic MIG change on one GPU, each run while holding its MigGpuLock
// (mig_session.hpp): undo what a killed provisioner left, destroy idle GPU instances, create one
// under the journal, and refresh the inventory cache (and tell the caller) afterwards. The provisioner
// (mig_provision.hpp) and `gpufrac gc` (mig_reclaim.hpp) are built from these.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/mig/mig_plan.hpp"
#include "nvml/mig_change.hpp"
#include "nvml/mig_session.hpp"

namespace gpufrac {

// The crash-test points: between creating the GPU instance and its compute instance, and between
// creating the compute instance and writing it down as made (then removing the journal).
inline constexpr const char* kFaultAfterGpuInstance = "mig-after-gi";
inline constexpr const char* kFaultAfterComputeInstance = "mig-after-ci";

// A journal left behind: the GPU instance it names is destroyed when it has no compute instance
// (the process died between the two creations) and kept otherwise (it died after: the instance is
// whole and will be found idle); a compute instance it made (in a new GPU instance, or added to
// an existing one: any the journal's list of earlier ones lacks) is written down as made; then the
// journal goes. Returns what was done, "" for nothing.
Result<std::string> recover_mig_journal(const MigDriver& driver, nvmlDevice_t device, const Config& cfg,
                                        const Gpu& gpu);

// GPU instances NVML has that the inventory does not list (without compute instance).
Result<std::vector<MigForeign>> foreign_gpu_instances(const MigDriver& driver, nvmlDevice_t device, const Gpu& gpu);

// Destroys each GPU instance, re-reading NVML after each to check that it is gone.
Result<> destroy_gpu_instances(const MigDriver& driver, nvmlDevice_t device, const Gpu& gpu,
                               const std::vector<MigDestroyStep>& steps);

// Writes the journal, creates the GPU instance (fault point mig-after-gi) and its compute instance,
// or adds the compute instance to step.gi (fault point mig-after-ci after either). The journal stays
// until finish_journaled.
Result<nvml::CreatedInstance> create_journaled(const MigDriver& driver, nvmlDevice_t device, const Config& cfg,
                                               const Gpu& gpu, const MigCreateStep& step, const std::string& container);
// After the inventory was read again: the new compute instance written down as made (by its UUID
// in `inv`), then the journal removed.
Result<> finish_journaled(const Config& cfg, const Inventory& inv, const std::string& gpu_uuid,
                          const nvml::CreatedInstance& made);

// The inventory discovered again (from NVML) and its cache written.
Result<Inventory> rediscover_mig(const Config& cfg);
// After a change: rediscover_mig, then `on_changed` told (the CLI rewrites the CDI spec). Its error
// is a warning in `warnings`, not a failure.
Result<Inventory> refresh_after_mig_change(const Config& cfg, const InventoryListener& on_changed,
                                           std::vector<std::string>& warnings);

// The capability device nodes of a new instance under host-root, made when missing: a real host
// creates /dev/nvidia-caps nodes only through nvidia-modprobe -f or nvidia-smi, so a fresh GPU or
// compute instance may have none yet. Made like nvidia-modprobe does (char device, mode 0400,
// root); a node that cannot be made is a warning in `warnings` (the container then cannot open it).
void ensure_cap_nodes(const Config& cfg, const MigInstance& instance, std::vector<std::string>& warnings);

}  // namespace gpufrac
