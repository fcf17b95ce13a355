// The one place the host maps a container's usage region: `gpufrac gc` reclaiming dead slots needs
// the shim's compare-and-swap on the owner word (limits_abi.h), which no read or write call gives.
// The region is read-write in the container, which may truncate the file under the mapping, and a
// touch of a page past the file's end is SIGBUS. So every access goes through a guard: a SIGBUS in
// it ends the access (nullopt) instead of the process, and the caller drops the mapping. The guarded
// code touches only plain data (no object with a destructor lives across it). Every other host
// access reads or writes without a mapping (region_read.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpufrac/limits_abi.h"

namespace gpufrac::limits {

// Installs the SIGBUS handler the guard needs (once per process; idempotent). A SIGBUS outside a
// guarded access keeps its default action.
void install_region_guard();

// A slot found dead in a copy of the region, and the owner word the copy held.
struct DeadSlot {
  unsigned index = 0;
  std::uint64_t owner = 0;
};

// Reclaims each slot that still holds the owner the copy saw, as gf_region_reclaim does (CAS owner
// -> me in state RECLAIMING, zero its counters, count the change, CAS -> free); me is the caller's
// gpufrac_owner(pid, start, 0). A slot whose owner word is not OWNED is swapped only under its lock
// byte, taken through fd (the region open read-write): a slot whose byte is held (a live owner, a
// new claimer, a reclaiming process) is left. The number reclaimed, or nullopt when the mapping
// faulted.
std::optional<unsigned> reclaim_guarded(gpufrac_region* r, const std::vector<DeadSlot>& dead, std::uint64_t me, int fd);

}  // namespace gpufrac::limits
