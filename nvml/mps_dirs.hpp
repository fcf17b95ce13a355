// The directories of one GPU's MPS daemon (docs/architecture.md "SM sharing"), under
// <state-dir>/mps/<GPU uuid>/ (core/plan/plan_mps.hpp names them):
//  - daemon.json and log/: the daemon's record and logs, on the state filesystem, never mounted into
//    a container;
//  - pipe/: a tmpfs of its own (4 MiB, 4096 inodes, mode 0755, nosuid, nodev, noexec, nosymfollow),
//    the pipe directory every SM share of the GPU gets read-write;
//  - shm/: a tmpfs of its own (1 GiB, 65536 inodes, mode 1777, the same flags), the daemon's and
//    its SM shares' /dev/shm.
// Both tmpfs are mounted fresh at each start of the daemon (the mounts of an earlier start are
// detached first): a daemon never starts in a directory a container has written to, and what a
// container writes there never lands on the state filesystem. Containers that hold an earlier
// start's mounts keep them; the host no longer reaches them.
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac {

// Detaches whatever is mounted on pipe/ and shm/, makes them anew, and mounts a fresh tmpfs on each
// (the record's directory and log/ are made when missing).
Result<> fresh_mps_dirs(const Config& cfg, const std::string& gpu_uuid);

// Detaches the pipe/ and shm/ tmpfs (none mounted is fine).
Result<> unmount_mps_dirs(const Config& cfg, const std::string& gpu_uuid);

}  // namespace gpufrac
