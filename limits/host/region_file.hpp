// The usage region of one container (limits_abi.h, item 2), host side: created next to the limit
// file before the container starts, read by `gpufrac status`, reclaimed by `gpufrac gc`; never mapped by
// a host reader (region_read.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpufrac/limits_abi.h"
#include "limits/host/limit_file.hpp"
#include "limits/host/region_read.hpp"

namespace gpufrac::limits {

// Creates (atomically replaces) path with a zeroed region of exactly sizeof(gpufrac_region):
// header filled, the limit file's devices and limits copied in for readers, mode 0666 so that a
// non-root user in the container can map it read-write. Every page is allocated before the rename
// (the full 196 KiB on tmpfs): a process touching a slot page through its mapping never needs room
// on the filesystem, so a full state directory fails here, with ENOSPC in one line, not with SIGBUS
// in a container's process later.
Result<> create_region(const std::string& path, const LimitFile& file);

struct DeviceUsage {
  std::string uuid;         // from the region header ("" if the host never wrote it)
  std::uint64_t limit = 0;  // from the region header
  std::uint64_t used = 0;   // bytes held by live processes
  std::uint64_t stale = 0;  // bytes still recorded for dead processes, until a reclaim
  // A process of the container ran launches on this device unarbitrated: the GPU's compute arbiter
  // kept it waiting past its bound (limits_abi.h compute_bypassed; the arbiter was tampered with).
  bool compute_bypassed = false;
  bool operator==(const DeviceUsage&) const = default;
};

struct RegionUsage {
  std::vector<DeviceUsage> devices;  // index = device line of the limit file
  unsigned live_processes = 0;       // slots whose owner runs (its lock held, or its pid and start time)
  unsigned dead_slots = 0;           // slots whose owner is gone, not yet reclaimed
};

// Sums the region's slots: a slot counts as live when its owner runs (slot_owner_live: a LOCKED
// slot's lock byte is held, asked through the descriptor the copy was read with; an OWNED slot's
// <proc_root>/<pid>/stat exists with the recorded start time and is not a zombie). Never writes a
// byte and never maps the file: a copy read with pread (region_read.hpp), so a container that
// truncates or grows its region meanwhile cannot hurt the reader; a region of the wrong size or
// header is refused as damaged (region_damaged). An all-zero region reads as empty; a hole (an
// older gpufrac's region) reads as zeros.
Result<RegionUsage> read_region_usage(const std::string& path, const std::string& proc_root = "/proc");

// The sums of read_region_usage over a region already read (a copy); fd: a descriptor of the region
// for LOCKED slots' liveness (-1: none, such slots count as live).
RegionUsage sum_region(const gpufrac_region* r, const std::string& proc_root, int fd = -1);

// Reclaims the slots of dead processes with the shim's protocol (what any container process does
// when it needs the bytes): a LOCKED slot's lock byte is taken for the swap, as the shim does. The
// dead slots are found in a copy; only when there are some is the region mapped (a hole allocated
// first: not mapped on a full filesystem), and each slot is swapped only while it still holds the
// owner the copy saw, every access guarded against SIGBUS (region_guard.hpp): a region truncated
// meanwhile is refused as damaged. Returns the number of slots reclaimed.
Result<unsigned> reclaim_region(const std::string& path, const std::string& proc_root = "/proc");

}  // namespace gpufrac::limits
