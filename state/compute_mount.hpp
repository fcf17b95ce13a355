// The per-GPU tmpfs that holds a GPU's compute arbiter (<state-dir>/compute/<uuid>.d/: the lease
// file, its slots file, and whatever else of the GPU's arbiter the host makes). Every container with
// a compute share on the GPU can resize the lease file through its read-write bind (ftruncate,
// writes past its end); on its own size- and inode-limited tmpfs that file cannot grow past
// kComputeDirBytes, so a tenant never fills the node's state filesystem.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace gpufrac {

// The bound on everything under one GPU's arbiter directory (the tmpfs's size=).
constexpr std::uint64_t kComputeDirBytes = 2ull << 20;
constexpr unsigned kComputeDirInodes = 1024;

// Mounts a fresh tmpfs (size kComputeDirBytes, nr_inodes kComputeDirInodes, mode 0755, nosuid,
// nodev, noexec, nosymfollow) on dir, made if needed; a tmpfs already mounted there is reused. What
// the state filesystem holds at dir (nothing but the tmpfs is ever written there) is removed first.
Result<> mount_compute_dir(const std::string& dir);

// Detaches every mount on dir (none is fine) and removes the directory (a missing one is fine).
Result<> unmount_compute_dir(const std::string& dir);

}  // namespace gpufrac
