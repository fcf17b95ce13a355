// The pure planner: Grant(s) + Inventory + Config -> Edits. Every front-end renders this one value:
// the hook applies it in the container's mount namespace, the runtime wrapper writes it into
// config.json, the CDI generator prints it. No I/O here (unit-tested without a filesystem).
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/plan/edits.hpp"
#include "core/plan/grant.hpp"

namespace gpufrac {

// One container instance's files on the host (<state-dir>/containers/<key>/, key = container_key()),
// bind-mounted into it.
struct ContainerFiles {
  std::string dir;
  std::string limits;   // the limit file (ro in the container)
  std::string usage;    // the accounting region (rw)
  std::string preload;  // the container's /etc/ld.so.preload (ro)
};
ContainerFiles container_files(const Config& cfg, const std::string& container_key);

// The compute arbiter of a GPU (include/gpufrac/arbiter_abi.h): its directory
// <state-dir>/compute/<uuid>.d on the host (a size-limited tmpfs of its own: state/compute_mount.hpp),
// its lease file <dir>/<uuid> there, GPUFRAC_CONTAINER_COMPUTE/<uuid> in a container (the shim
// finds it beside its region), and its slots file beside it (<uuid>.slots).
std::string compute_arbiter_dir(const Config& cfg, const std::string& device_uuid);
std::string compute_arbiter_path(const Config& cfg, const std::string& device_uuid);
// The arbiter of each granted device with a compute share smaller than the whole GPU (0 < compute_ppm
// < 1000000: a whole GPU is never arbitrated), bound into the container (hook, wrapper, DRA claims,
// and the CDI hook beside the limit file), all nosuid, nodev, noexec: the lease file read-write, the
// slots file read-only, the lanes directory <lease file>.lanes read-only, and the container's own
// lane <lease file>.lanes/<container_key> read-write (arbiter_abi.h, layout 3). Grants of the same
// device share them.
std::vector<EditMount> plan_compute_mounts(const std::vector<Grant>& grants, const Config& cfg,
                                           const std::string& container_key);

// Device nodes of the granted GPUs / MIG instances plus the control nodes, with explicit numbers and
// host paths under host-root. Fails when the driver's majors or a MIG instance's capability minors
// are unknown (the container could not open its GPU).
Result<std::vector<EditDeviceNode>> plan_device_nodes(const std::vector<Grant>& grants, const Inventory& inv,
                                                      const Config& cfg);

// The fresh tmpfs at /run/gpufrac and the shim inside it.
std::vector<EditMount> plan_shim_mounts(const Config& cfg);
// The per-container limits, usage and preload files.
std::vector<EditMount> plan_state_mounts(const ContainerFiles& files);
// gpufrac's directory in the container: the tmpfs at /run/gpufrac with the shim, limits and usage.
// gpufrac-hook mounts it itself in every front-end, the mount points made through the tmpfs's fd
// (hook/ns_apply.hpp); no spec carries it, since a runtime would make those mount points by a path
// from the root, which a directory of the rootfs exchanged during the start redirects.
// The arbiters of the grants with a compute share are among its mounts (plan_compute_mounts).
std::vector<EditMount> plan_gpufrac_dir(const Config& cfg, const ContainerFiles& files,
                                        const std::vector<Grant>& grants);
// Informational environment for the CDI and wrapper paths (the hook cannot change the env).
std::vector<std::string> plan_env(const std::vector<Grant>& grants);

// The driver's user space as bind mounts (docs/architecture.md "The driver's user space"): read-only,
// nosuid, nodev; firmware also noexec; the IPC sockets writable (nosuid, nodev, noexec).
std::vector<EditMount> plan_driver_mounts(const DriverFiles& driver);
// NVIDIA_VISIBLE_DEVICES for NVIDIA's runtime: "void" when gpufrac brings the driver itself (NVIDIA's
// runtime then adds nothing), else exactly the granted devices' UUIDs (it cannot add a GPU gpufrac
// did not book).
std::string plan_nvidia_visible_devices(const std::vector<Grant>& grants, bool with_driver);
// The argument of `gpufrac-hook createRuntime --ld-cache DIRS`: the driver's library directories.
std::string ld_cache_arg(const DriverFiles& driver);

// Every hook gpufrac writes has a timeout: a runtime waits forever for a hook without one.
inline constexpr int kHookTimeoutS = 30;

// A lifecycle hook calling gpufrac-hook with an explicit env (never the runtime's environment, which
// may carry LD_PRELOAD) and a timeout: args = {"gpufrac-hook", stage, extra...}.
EditHook plan_hook(const Config& cfg, const std::string& oci_stage, const std::string& hook_stage,
                   const std::vector<std::string>& extra_args = {});

// Everything one container gets on the hook path (no hooks: front-ends add their own; the compute
// arbiters of grants with a compute share are among the mounts); with_driver adds the driver's files
// (the front-end decided with injects_driver).
Result<Edits> plan_container_edits(const std::vector<Grant>& grants, const Inventory& inv, const Config& cfg,
                                   const std::string& container_id, bool with_driver);
// The same less gpufrac's directory (plan_gpufrac_dir): what a spec carries (gpufrac-runtime's
// config.json, a DRA claim's CDI spec); the spec's createRuntime hook mounts the directory.
Result<Edits> plan_spec_edits(const std::vector<Grant>& grants, const Inventory& inv, const Config& cfg,
                              const std::string& container_id, bool with_driver);

// The container's /etc/ld.so.preload: the shim first, then the image's own entries (deduplicated,
// comments and blank lines dropped).
std::string render_preload(const std::string& image_preload);

}  // namespace gpufrac
