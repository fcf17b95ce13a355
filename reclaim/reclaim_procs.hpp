// The burst reclaimer's view of processes (docs/architecture.md "Burstable memory"): which share
// each process the driver lists belongs to, told by the kernel (its /proc/<pid>/cgroup is the one of
// the process the booking was made with), and stopping one safely (a pidfd: a pid reused meanwhile
// is never signalled).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/burst/lending.hpp"
#include "core/error.hpp"
#include "nvml/process_view.hpp"
#include "reclaim/reclaim_shares.hpp"

namespace gpufrac::reclaim {

// /proc/<pid>/cgroup as the kernel states it (every hierarchy's line, on one line:
// state/claim_members.hpp), "" when it cannot be read.
std::string process_cgroups(const std::string& proc_root, std::int64_t pid);

// Which cgroups tell each site's processes apart. A site's memberships are those of its booking
// process (or, for a claim, of its containers); a site whose process is gone or pending, or whose
// membership is the reclaimer's own, has none. Sites that share a membership (two containers in one
// cgroup: a spec may name the same linux.cgroupsPath twice, a runtime may put a pod in one) cannot
// be told apart by the kernel: each has none, and `untold` names the others.
struct Memberships {
  std::vector<std::vector<std::string>> cgroups;  // per site, its memberships (none: unknown)
  std::vector<std::vector<std::size_t>> untold;   // per site, the sites sharing one of its cgroups
};
Memberships memberships(const std::vector<ShareSite>& sites, const std::string& proc_root);

// The driver's processes of a GPU, by share.
struct Attribution {
  std::vector<std::vector<GpuProcessMemory>> of;  // per site, its processes
  std::uint64_t total = 0;                        // held by every process on the GPU
  std::vector<std::vector<std::string>> cgroups;  // per site, its memberships (none: unknown)
  std::vector<std::vector<std::size_t>> untold;   // per site, the sites it cannot be told from
};

// Each process goes to the one site whose memberships hold its cgroups; a process of sites that
// cannot be told apart (memberships above) goes to none: attribution is unambiguous or not made.
Attribution attribute(const std::vector<ShareSite>& sites, const std::vector<GpuProcessMemory>& procs,
                      const std::string& proc_root);

// The shares as lending.hpp sees them: the sites' requests and limits, the usage their regions
// publish (`published`, per site) and what the driver sees them hold.
std::vector<BurstShare> burst_shares(const std::vector<ShareSite>& sites, const std::vector<std::uint64_t>& published,
                                     const Attribution& a);

// Whether pid's cgroups are one of `cgroups` (the process is still one of the share's).
bool in_cgroups(const std::string& proc_root, std::int64_t pid, const std::vector<std::string>& cgroups);

// SIGKILL to pid through a pidfd, once its cgroups are still one of `cgroups` (the same process, or one
// of its container's). An error names the pid and why.
Result<> stop_process(const std::string& proc_root, std::int64_t pid, const std::vector<std::string>& cgroups);

}  // namespace gpufrac::reclaim
