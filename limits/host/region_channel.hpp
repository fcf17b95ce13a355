// The burst reclaimer's side of a usage region (limits_abi.h "Burstable memory"; cli/reclaimer.hpp):
// what it reads of a region each pass and the few fields it stores there, all through a descriptor
// with pread and pwrite at fixed offsets (region_read.hpp), never a mapping: a container that
// truncates or grows its region cannot crash the reclaimer, and the host never writes past the
// region's size. Each store is one pwrite of an aligned field, in the order the ABI gives (the beat
// last; the answer before the count it answers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpufrac/limits_abi.h"

namespace gpufrac::limits {

// What the reclaimer reads of a region: its processes' use of one device and the request fields.
struct RegionReading {
  std::vector<std::uint64_t> owners;  // slot owners (slots in use)
  std::vector<std::uint64_t> used;    // their used[device]
  std::vector<std::uint8_t> live;     // 1: the slot's owner runs (slot_owner_live, at the read)
  std::uint32_t reclaim_asked = 0, reclaim_answered = 0;
  std::uint8_t reclaim_device = 0;
  std::uint64_t reclaim_bytes = 0;
};

// Reads the region open at fd (its header and slots in use, into buf, which the caller keeps
// between passes) and fills out for device, each slot's liveness judged then (slot_owner_live, pids
// under proc_root); damaged (region_damaged) for a wrong size or header.
// An all-zero region (no process started yet) reads as no slots and no request.
Result<> read_region_reading(int fd, const std::string& path, unsigned device, gpufrac_region& buf, RegionReading& out,
                             const std::string& proc_root = "/proc");

// The bytes the live processes of a reading hold.
std::uint64_t live_use(const RegionReading& reading);

// The reclaimer's stores: the ceiling and its device (burst only), then the beat; the answer, then
// the count it answers.
Result<> publish_region(int fd, const std::string& path, std::uint32_t beat, bool burst, std::uint8_t device,
                        std::uint64_t ceiling);
Result<> answer_region(int fd, const std::string& path, std::uint32_t answered, std::uint8_t answer);

}  // namespace gpufrac::limits
