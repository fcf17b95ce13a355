#include "reclaim/reclaim_procs.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include "core/fs.hpp"
#include "core/process.hpp"
#include "core/quantity.hpp"
#include "core/text.hpp"
#include "state/claim_members.hpp"

namespace gpufrac::reclaim {

std::string process_cgroups(const std::string& proc_root, std::int64_t pid) {
  auto text = fs::read_file(text::cat(proc_root, "/", pid, "/cgroup"), 64u << 10);
  return text ? one_line_cgroups(*text) : std::string();
}

namespace {

bool member(const std::vector<std::string>& list, const std::string& cg) {
  return !cg.empty() && std::find(list.begin(), list.end(), cg) != list.end();
}

}  // namespace

Memberships memberships(const std::vector<ShareSite>& sites, const std::string& proc_root) {
  Memberships m;
  const std::string own = process_cgroups(proc_root, ::getpid());
  for (const auto& s : sites) {
    std::vector<std::string> list = s.members;
    if (s.pid != 0 && process_liveness(proc_root, s.pid, s.pid_start) == Liveness::alive)
      list.push_back(process_cgroups(proc_root, s.pid));
    std::erase_if(list, [&](const std::string& cg) { return cg.empty() || cg == own; });
    m.cgroups.push_back(std::move(list));
  }
  m.untold.resize(sites.size());
  for (std::size_t i = 0; i < sites.size(); ++i)
    for (std::size_t j = i + 1; j < sites.size(); ++j)
      if (std::any_of(m.cgroups[i].begin(), m.cgroups[i].end(),
                      [&](const auto& cg) { return member(m.cgroups[j], cg); }))
        m.untold[i].push_back(j), m.untold[j].push_back(i);
  for (std::size_t i = 0; i < sites.size(); ++i)
    if (!m.untold[i].empty()) m.cgroups[i].clear();
  return m;
}

Attribution attribute(const std::vector<ShareSite>& sites, const std::vector<GpuProcessMemory>& procs,
                      const std::string& proc_root) {
  Attribution a;
  a.of.resize(sites.size());
  Memberships m = memberships(sites, proc_root);
  a.cgroups = std::move(m.cgroups);
  a.untold = std::move(m.untold);
  for (const auto& p : procs) {
    a.total = saturating_add(a.total, p.bytes);
    const std::string cg = process_cgroups(proc_root, p.pid);
    for (std::size_t i = 0; i < sites.size(); ++i)
      if (member(a.cgroups[i], cg)) {
        a.of[i].push_back(p);
        break;
      }
  }
  return a;
}

std::vector<BurstShare> burst_shares(const std::vector<ShareSite>& sites, const std::vector<std::uint64_t>& published,
                                     const Attribution& a) {
  std::vector<BurstShare> out;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    BurstShare s{sites[i].id, sites[i].request, sites[i].limit, published[i], 0, 0};
    for (const auto& p : a.of[i]) {
      s.held = saturating_add(s.held, p.bytes);
      s.processes++;
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool in_cgroups(const std::string& proc_root, std::int64_t pid, const std::vector<std::string>& cgroups) {
  return member(cgroups, process_cgroups(proc_root, pid));
}

Result<> stop_process(const std::string& proc_root, std::int64_t pid, const std::vector<std::string>& cgroups) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (fd < 0) return sys_error(text::cat("cannot open process ", pid, " (pidfd_open)"));
  fs::UniqueFd pidfd(fd);
  // The pidfd names one process from now on; check that it is still the container's.
  if (!member(cgroups, process_cgroups(proc_root, pid)))
    return user_error(text::cat("process ", pid, " left the borrower's container; not stopped"));
  if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) != 0)
    return sys_error(text::cat("cannot stop process ", pid));
  return {};
}

}  // namespace gpufrac::reclaim
