// One container instance's files on the host, <state-dir>/containers/<key>/ (key = container_key():
// the id and the instance, so two containers with one id never share them): the limit file and usage region
// the shim reads (limits_abi.h) and the container's /etc/ld.so.preload. Written by whichever
// front-end books the container (hook, runtime wrapper, CDI hook), removed at release.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/plan/plan.hpp"

namespace gpufrac {

// How the limit and preload files are updated: replaced atomically (a new inode, before anything is
// mounted), or rewritten in place when they are already bind-mounted into the container (a mount
// pins the inode: a container with several CDI devices gets one hook per device).
enum class FileUpdate { replace, in_place };

// Writes the limit file listing every booking of the container, creates the usage region if it does
// not exist yet (an existing region keeps its live counts), sets up its slots in the compute
// arbiters of devices with a compute share (state/compute_slots.hpp), and writes the preload file
// from the image's own /etc/ld.so.preload content. Directory mode 0755.
Result<ContainerFiles> write_container_files(const Config& cfg, const std::string& container_key,
                                             const std::vector<LedgerEntry>& bookings, const std::string& image_preload,
                                             FileUpdate update = FileUpdate::replace);
// Frees the container's compute slots, unmounts its directory's tmpfs (state/container_mount.hpp) and
// removes the directory; a missing directory is not an error.
Result<> remove_container_files(const Config& cfg, const std::string& container_key);

}  // namespace gpufrac
