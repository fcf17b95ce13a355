// What the burst reclaimer watches (docs/architecture.md "Burstable memory"): every GPU on which a
// booking has a limit above its request, and each share there: the container's bookings on the GPU
// (request, limit), where its usage region is and which device of the region is this GPU, and the
// process the booking was made with, whose cgroup tells the container's processes apart. Read from
// the ledger and the containers' limit files; nothing here trusts what a container wrote.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac::reclaim {

struct ShareSite {
  std::string key;  // container key (or a claim's uid)
  std::string id;   // container id (or the claim's namespace/name), for people
  std::string gpu_uuid;
  std::uint64_t request = 0, limit = 0;  // summed over the container's bookings on the GPU
  std::int64_t pid = 0;                  // the booking's process (0: pending, or a claim)
  std::uint64_t pid_start = 0;
  std::string region;                // <state-dir>/containers/<key>/usage
  int device = -1;                   // the GPU's device index in the region (-1: the limit file does not list it)
  std::vector<std::string> members;  // a claim's containers' cgroups (state/claim_members.hpp)
  bool mps = false;                  // an SM share, or any share of a GPU in MPS mode (its processes are MPS clients)
  bool burst() const { return limit > request; }
  // Whether the reclaimer can tell its processes apart: a booking process, or a claim's members.
  bool known() const { return pid != 0 || !members.empty(); }
};

// The shares of every GPU holding a burst booking, by GPU uuid (shares in ledger order).
std::map<std::string, std::vector<ShareSite>> burst_sites(const LedgerState& state, const Config& cfg);

// Whether the ledger holds a booking with a limit above its request.
bool has_burst_booking(const LedgerState& state);

}  // namespace gpufrac::reclaim
