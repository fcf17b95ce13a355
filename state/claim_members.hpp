// The containers of a Kubernetes claim, as the burst reclaimer tells their processes apart
// (docs/architecture.md "Burstable memory"): a claim's bookings have no process of their own, so
// each container that starts with the claim (its CDI hook, `gpufrac-hook createRuntime --claim`)
// adds its cgroup membership, /proc/<pid>/cgroup as the kernel states it, to
// <state-dir>/containers/<uid>@dra/members: a host file, never mounted into a container. One line
// per container (the text's line breaks as ';'); removed with the claim's directory.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac {

// /proc/<pid>/cgroup's text on one line (line breaks as ';'), the form members are compared in.
std::string one_line_cgroups(const std::string& text);

// Appends the membership of `pid` (read under proc-root) to the claim directory `key`'s members.
Result<> add_claim_member(const Config& cfg, const std::string& key, long pid);

// The memberships recorded for `key` (none when there is no file).
std::vector<std::string> claim_members(const Config& cfg, const std::string& key);

}  // namespace gpufrac
