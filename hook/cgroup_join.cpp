#include "hook/cgroup_join.hpp"

#include <algorithm>

#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/plan/plan.hpp"
#include "core/process.hpp"
#include "core/text.hpp"
#include "state/claim_members.hpp"

namespace gpufrac::hook {

namespace {

std::string cgroups_of(const std::string& proc_root, std::int64_t pid) {
  auto text = fs::read_file(text::cat(proc_root, "/", pid, "/cgroup"), 64u << 10);
  return text ? one_line_cgroups(*text) : std::string();
}

// The memberships of a share with a burst limit: its booking process's while it lives, or a claim's
// containers'.
std::vector<std::string> burst_memberships(const Config& cfg, const LedgerEntry& e) {
  if (e.claim_owned()) return claim_members(cfg, container_key(e));
  if (e.pid == 0 || process_liveness(cfg.proc_root, e.pid, e.pid_start) != Liveness::alive) return {};
  return {cgroups_of(cfg.proc_root, e.pid)};
}

std::unexpected<Error> refusal(const LedgerEntry& e) {
  return user_error(text::cat(
      "linux.cgroupsPath: this container's cgroup is that of ", e.claim_owned() ? e.claim : e.container_id,
      ", which may borrow memory on ", e.gpu_uuid,
      " (its limit is above its request); the reclaimer could not tell their processes apart nor take its loan "
      "back; give each container its own cgroup (a distinct linux.cgroupsPath)"));
}

}  // namespace

Result<> check_cgroup_join(const Config& cfg, std::int64_t pid, const std::string& own_key,
                           const std::vector<LedgerEntry>& bookings) {
  const std::string own = cgroups_of(cfg.proc_root, pid);
  if (own.empty()) return {};
  auto state = Ledger(LedgerOptions::from(cfg)).read();
  if (!state) return std::unexpected(state.error());
  auto on_our_gpu = [&](const LedgerEntry& e) {
    return std::any_of(bookings.begin(), bookings.end(),
                       [&](const LedgerEntry& b) { return b.gpu_uuid == e.gpu_uuid; });
  };
  for (const auto& e : state->entries) {
    if (e.limit() <= e.bytes || e.mig || container_key(e) == own_key || !on_our_gpu(e)) continue;
    const auto members = burst_memberships(cfg, e);
    if (std::find(members.begin(), members.end(), own) != members.end()) return refusal(e);
  }
  return {};
}

}  // namespace gpufrac::hook
