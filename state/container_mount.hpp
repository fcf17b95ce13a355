// The bound on what one container can put on the host (docs/architecture.md "Host state"): its
// directory <state-dir>/containers/<key>/ is a tmpfs of its own, kContainerDirBytes large, mounted
// by the front-end that books the container before its files are written, and unmounted when they
// are removed (release, poststop, gc). The container can write only its usage region there (a rw
// bind), so writing past the region's end, or truncating and regrowing it, fills at most this
// tmpfs (ENOSPC for the container), never the state filesystem its neighbours' starts need.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac {

// The usage region (196 KiB) and the host's small files (limit file, preload, their temporary
// copies while replaced) with room to spare; a private ld.so.cache (a read-only root) adds its own
// size (grow_container_dir).
inline constexpr std::uint64_t kContainerDirBytes = 512u << 10;
inline constexpr std::uint64_t kContainerDirInodes = 64;

// Makes the container's directory and mounts its tmpfs there (nosuid, nodev, noexec, mode 0755),
// unless it is a mount point already (a second hook of one container). Returns true when it
// mounted now. Needs CAP_SYS_ADMIN.
Result<bool> mount_container_dir(const Config& cfg, const std::string& container_key);

// Raises the tmpfs's size by extra bytes (rounded up to pages), for a file the host writes there
// that the base size does not cover. A directory that is not a mount point is left as it is.
Result<> grow_container_dir(const Config& cfg, const std::string& container_key, std::uint64_t extra);

// Detaches the tmpfs of a container directory, if it is one (before the directory is removed).
Result<> unmount_container_dir(const std::string& dir);

}  // namespace gpufrac
