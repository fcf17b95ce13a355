// A usage region the host keeps mapped while its container runs (the burst reclaimer,
// reclaim/reclaimer.hpp), read and written so that the container cannot crash the host process: the
// region is read-write in the container, which may truncate the file under the mapping, and a
// touch of a page past the file's end is SIGBUS. Every access goes through a guard: a SIGBUS in it
// ends the access (false) instead of the process, and the caller drops the mapping. The guarded
// code touches only plain data (no object with a destructor lives across it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpufrac/limits_abi.h"

namespace gpufrac::limits {

// Installs the SIGBUS handler the guard needs (once per process; idempotent).
void install_region_guard();

// What the reclaimer reads of a region: its processes' use of one device and the request fields.
struct RegionReading {
  std::vector<std::uint64_t> owners;  // slot owners (slots in use)
  std::vector<std::uint64_t> used;    // their used[device]
  std::uint32_t reclaim_asked = 0, reclaim_answered = 0;
  std::uint8_t reclaim_device = 0;
  std::uint64_t reclaim_bytes = 0;
};

// Reads it with atomic loads; false when the mapping faulted (out is then incomplete).
bool read_region_guarded(const gpufrac_region* r, unsigned device, RegionReading& out);

// The bytes the live processes of a reading hold (pid and start time checked under proc_root).
std::uint64_t live_use(const RegionReading& reading, const std::string& proc_root);

// The reclaimer's stores, each an atomic store; false when the mapping faulted.
bool publish_guarded(gpufrac_region* r, std::uint32_t beat, bool burst, std::uint8_t device, std::uint64_t ceiling);
bool answer_guarded(gpufrac_region* r, std::uint32_t answered, std::uint8_t answer);

}  // namespace gpufrac::limits
