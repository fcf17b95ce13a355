// A container's usage region read on the host without mapping it (docs/architecture.md "Trust
// model"). The region is read-write in the container, which may truncate or grow the file at any
// moment; a mapped page past the file's end is SIGBUS for whoever touches it. So host readers copy
// the region with pread into a buffer of its fixed size (never more), and host writers (the burst
// reclaimer) store their few fields with pwrite at fixed offsets. A file that is not a regular file
// of exactly sizeof(gpufrac_region) bytes, or whose header is not a gpufrac region's, is damaged:
// refused with errno EBADMSG (region_damaged), never read further.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "gpufrac/limits_abi.h"

namespace gpufrac::limits {

// A copy of a whole region: a snapshot, each word as the copy saw it (the container's processes
// keep changing it; fields are not read atomically together).
using RegionCopy = std::unique_ptr<gpufrac_region>;

// Whether an error of the readers below says the region is damaged (wrong size, not a regular
// file, another header) rather than missing or unreadable.
bool region_damaged(const Error& e);

// Opens the region without following a symlink, read-only or read-write (never blocking on a FIFO).
Result<int> open_region(const std::string& path, bool writable);

// Copies the region open at fd: refused (damaged) unless it is a regular file of exactly the
// region's size before and after the copy. Reads at most sizeof(gpufrac_region) + 1 bytes.
Result<RegionCopy> read_region_copy(int fd, const std::string& path);
Result<RegionCopy> read_region_copy(const std::string& path);

// Reads the header and the slots in use (up to the header's slot_high_water, at most
// GPUFRAC_MAX_SLOTS) into out, a buffer the caller keeps; the rest of out is left as it was. The
// size is checked first, as above. What the reclaimer does every pass: less than the whole copy.
Result<> read_region_head(int fd, const std::string& path, gpufrac_region& out);

// The header check: true for a valid header, false for an all-zero (never used) one, else damaged.
// Version 1 (containers started before an upgrade) has the same layout.
Result<bool> check_region_header(const gpufrac_region& r, const std::string& path);

// Whether the process owning slot index (owner word as read) runs: an OWNED slot by its pid and
// start time under proc_root; a LOCKED one by its lock byte (limits_abi.h), asked through fd, a
// descriptor of the region (read-only is enough; -1 or a kernel that cannot say: alive), whatever
// PID namespace the owner runs in. Free and RECLAIMING slots are not live processes.
bool slot_owner_live(std::uint64_t owner, unsigned index, int fd, const std::string& proc_root);

// Stores size bytes at the field's offset with pwrite, after checking that the file is still a
// regular file of the region's size (a file truncated meanwhile grows back to at most the region's
// size: the host never writes past it). Damaged when the size differs.
Result<> write_region_field(int fd, const std::string& path, std::size_t offset, const void* value, std::size_t size);

}  // namespace gpufrac::limits
