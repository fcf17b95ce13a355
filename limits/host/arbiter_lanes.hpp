// The lane files of a GPU's compute arbiter (gpufrac/arbiter_abi.h, layout 3): one per slot in use,
// <lease file>.lanes/<container key>, 256 bytes, mode 0666. Each container's own lane is bound
// read-write into it, the directory read-only into every container of the GPU. A container can
// resize, chmod or chown its own lane through its bind, so the host never maps one: it reads lanes
// with pread, makes a new one in a temporary and renames it in place, and puts a lane's size, mode
// and owner back in place at booking and gc.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpufrac/arbiter_abi.h"

namespace gpufrac::limits {

constexpr mode_t kLaneFileMode = 0666;

// <path>.lanes: the lanes directory of the arbiter whose lease file is path.
std::string arbiter_lanes_dir(const std::string& path);
// <path>.lanes/<key>: the lane of the slot whose container key is key.
std::string arbiter_lane_path(const std::string& path, const std::string& key);

// A container key a lane file may be named by: 1 to GPUFRAC_ARBITER_KEY - 1 characters, no '/',
// not "." or "..". A one-line error naming the key otherwise.
Result<> check_lane_key(const std::string& path, const std::string& key);

// Writes a fresh lane for key (vtime = the lease file's vclock, read with pread: a new slot joins the
// others with no credit; the rest zero): allocated in full in a temporary, mode 0666, renamed over
// whatever was there. Makes the lanes directory (0755) when it is missing.
Result<> write_new_lane(const std::string& path, const std::string& key);

// Puts key's lane back as the host made it, in place (the container keeps its mapping): size, mode,
// owner (this process's euid and egid); a missing lane is written fresh. One phrase per repair.
Result<std::vector<std::string>> repair_lane(const std::string& path, const std::string& key);

// Removes key's lane (a missing one is fine).
void remove_lane(const std::string& path, const std::string& key);
// Removes every lane file whose name is not in keep; with keep empty, the directory too.
void remove_lanes_except(const std::string& path, const std::vector<std::string>& keep);

// A bounded copy of key's lane (pread of 256 bytes, never mapped) and how the file differs from what
// the host made (size, mode, owner as owner_uid:owner_gid), one phrase each naming the lane. A missing
// or short lane reads as zero past what was there.
struct LaneCopy {
  gpufrac_arbiter_lane lane{};
  bool readable = false;
  std::vector<std::string> wrong;
};
LaneCopy read_lane_file(const std::string& path, const std::string& key, uid_t owner_uid, gid_t owner_gid);

// Every ACTIVE slot's lane of the slots file a (zero where unreadable), indexed by slot; how each
// lane file differs from what the host made goes to wrong, one line each naming the slot.
std::vector<gpufrac_arbiter_lane> read_slot_lanes(const std::string& path, const gpufrac_arbiter_slots& a,
                                                  uid_t owner_uid, gid_t owner_gid, std::vector<std::string>& wrong);

// gc: every ACTIVE slot's lane repaired (repair_lane; its phrases, or the error, go to repaired) and
// every lane file of no slot in use removed.
void repair_slot_lanes(const std::string& path, const gpufrac_arbiter_slots& a, std::vector<std::string>& repaired);

}  // namespace gpufrac::limits
