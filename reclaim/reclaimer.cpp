#include "reclaim/reclaimer.hpp"

#include <time.h>

#include <algorithm>
#include <set>
#include <thread>

#include "core/ledger/ledger.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "limits/host/region_channel.hpp"
#include "limits/host/region_read.hpp"
#include "reclaim/reclaim_procs.hpp"

namespace gpufrac::reclaim {

namespace {

constexpr std::uint64_t kCheckEveryPasses = 50;  // region checks: about once a second
constexpr int kGoneWaitMs = 5000;                // a stopped process's memory leaves the driver's view

std::uint64_t gpu_memory(const Inventory& inv, const std::string& uuid) {
  const Gpu* g = inv.gpu_by_uuid(uuid);
  return g != nullptr ? g->memory_bytes : 0;
}

}  // namespace

std::uint32_t reclaimer_beat_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const auto ms = static_cast<std::uint32_t>(static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
                                             static_cast<std::uint64_t>(ts.tv_nsec) / 1000000);
  return ms == 0 ? 1 : ms;
}

Reclaimer::Reclaimer(Config cfg, ProcessView view, Inventory inv)
    : cfg_(std::move(cfg)), view_(std::move(view)), inv_(std::move(inv)) {
  if (auto l = load_reclaim_log(reclaim_log_path(cfg_))) log_ = std::move(*l);
}

Reclaimer::Region* Reclaimer::region(const std::string& path) {
  auto it = regions_.find(path);
  if (it == regions_.end()) {
    auto fd = limits::open_region(path, true);
    if (!fd) return nullptr;  // not made yet, or removed: the next pass tries again
    it = regions_.emplace(path, Region{fs::UniqueFd(*fd), std::make_unique<gpufrac_region>()}).first;
  }
  return &it->second;
}

void Reclaimer::drop(const std::string& path, const std::string& id, const Error& why) {
  regions_.erase(path);
  if (!limits::region_damaged(why) || !damaged_.insert(path).second) return;
  log::warn("reclaim: the usage region of " + id + " is damaged (its container truncated, grew or overwrote it?): " +
            why.message + "; its share is held at its request, with no burst, until the region is whole again");
}

std::vector<Reading> Reclaimer::read_sites(const std::vector<ShareSite>& sites) {
  std::vector<Reading> out(sites.size());
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const ShareSite& s = sites[i];
    Region* r = s.device >= 0 ? region(s.region) : nullptr;
    if (r == nullptr) continue;
    auto read = limits::read_region_reading(r->fd.get(), s.region, static_cast<unsigned>(s.device), *r->buf,
                                            out[i].region, cfg_.proc_root);
    if (!read) {
      if (limits::region_damaged(read.error())) out[i].used = s.request;  // believed at its request
      drop(s.region, s.id, read.error());
      continue;
    }
    out[i].ok = true;
    out[i].used = limits::live_use(out[i].region);
  }
  return out;
}

void Reclaimer::note_untold(const std::string& gpu, const std::vector<ShareSite>& sites, const Memberships& m) {
  for (std::size_t i = 0; i < sites.size(); ++i) {
    auto it = log_.untold.find(sites[i].key);
    if (m.untold[i].empty()) {
      if (it != log_.untold.end() && it->second.gpu_uuid == gpu) log_.untold.erase(it), log_dirty_ = true;
      continue;
    }
    ReclaimUntold u{gpu, sites[i].id, {}};
    for (std::size_t j : m.untold[i]) u.with.push_back(sites[j].id);
    if (it != log_.untold.end() && it->second == u) continue;
    log::warn(text::cat("reclaim: ", u.id, " shares a cgroup with ", text::join(u.with, ", "), " on ", gpu,
                        ": the kernel cannot tell their processes apart; neither borrows, and nothing is taken back "
                        "for either"));
    log_.untold[sites[i].key] = std::move(u);
    log_dirty_ = true;
  }
}

void Reclaimer::publish(const std::string& gpu, const std::vector<ShareSite>& sites,
                        const std::vector<Reading>& readings, std::uint64_t total, std::uint32_t beat) {
  const Memberships m = memberships(sites, cfg_.proc_root);
  note_untold(gpu, sites, m);
  std::vector<BurstShare> shares;
  for (std::size_t i = 0; i < sites.size(); ++i)
    shares.push_back({sites[i].id, sites[i].request, sites[i].limit, readings[i].used, 0, 0});
  for (std::size_t i = 0; i < sites.size(); ++i) {
    Region* r = readings[i].ok ? region(sites[i].region) : nullptr;
    if (r == nullptr) continue;
    // A share whose processes cannot be told apart could not be stopped: it borrows nothing.
    const bool told = sites[i].known() && m.untold[i].empty();
    const std::uint64_t ceiling = told ? lend_ceiling(shares, i, total) : sites[i].request;
    if (auto w = limits::publish_region(r->fd.get(), sites[i].region, beat, sites[i].burst(),
                                        static_cast<std::uint8_t>(sites[i].device), ceiling);
        !w)
      drop(sites[i].region, sites[i].id, w.error());
  }
}

void Reclaimer::answer(const std::string& gpu, const std::vector<ShareSite>& sites,
                       const std::vector<Reading>& readings, std::uint64_t total) {
  std::vector<std::uint64_t> used;
  for (const auto& r : readings) used.push_back(r.used);
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const limits::RegionReading& rd = readings[i].region;
    if (!readings[i].ok || rd.reclaim_asked == rd.reclaim_answered || rd.reclaim_device != sites[i].device) continue;
    const ReclaimAnswer a = serve(gpu, sites, used, total, i, rd.reclaim_bytes);
    Region* r = region(sites[i].region);
    if (r == nullptr) continue;
    if (auto w = limits::answer_region(r->fd.get(), sites[i].region, rd.reclaim_asked, static_cast<std::uint8_t>(a));
        !w)
      drop(sites[i].region, sites[i].id, w.error());
  }
}

ReclaimAnswer Reclaimer::serve(const std::string& gpu, const std::vector<ShareSite>& sites,
                               const std::vector<std::uint64_t>& used, std::uint64_t total, std::size_t asker,
                               std::uint64_t bytes) {
  for (std::size_t stopped = 0; stopped <= sites.size(); ++stopped) {
    auto procs = view_.processes(gpu);
    if (!procs) {
      log::error("reclaim: " + procs.error().message);
      return ReclaimAnswer::none;
    }
    const Attribution a = attribute(sites, *procs, cfg_.proc_root);
    if (!a.untold[asker].empty()) {  // one cgroup with another share: whose memory is whose is unknown
      log::info(text::cat("reclaim for ", sites[asker].id, " on ", gpu,
                          ": it shares a cgroup with another share; nothing is taken back"));
      return ReclaimAnswer::untold;
    }
    if (a.cgroups[asker].empty()) {  // its processes cannot be told apart: its need cannot be checked
      log::info(text::cat("reclaim for ", sites[asker].id, " on ", gpu, ": its processes cannot be told apart"));
      return ReclaimAnswer::none;
    }
    const auto shares = burst_shares(sites, used, a);
    const ReclaimStep step = plan_reclaim(shares, asker, bytes, total > a.total ? total - a.total : 0, cfg_.burst);
    if (step.answer != ReclaimAnswer::freed) {
      if (step.answer == ReclaimAnswer::refused) log_.refused[gpu]++, log_dirty_ = true;
      log::info(text::cat("reclaim for ", sites[asker].id, " on ", gpu, ": ", to_string(step.answer), ": ", step.why));
      return stopped > 0 && step.answer == ReclaimAnswer::retry ? ReclaimAnswer::freed : step.answer;
    }
    if (!stop_one(gpu, sites, a, *step.victim, sites[asker].id)) return ReclaimAnswer::none;
  }
  return ReclaimAnswer::none;
}

bool Reclaimer::stop_one(const std::string& gpu, const std::vector<ShareSite>& sites, const Attribution& a,
                         std::size_t victim, const std::string& owner) {
  std::string reason;
  if (cfg_.burst.reclaim == BurstReclaim::swap && swap_out(gpu, sites, a, victim, owner, reason)) return true;
  const auto& procs = a.of[victim];
  auto biggest = std::max_element(procs.begin(), procs.end(), [](const GpuProcessMemory& x, const GpuProcessMemory& y) {
    return x.bytes < y.bytes;
  });
  if (biggest == procs.end()) return false;
  return kill_one(gpu, sites[victim], a.cgroups[victim], *biggest, owner, reason);
}

bool Reclaimer::kill_one(const std::string& gpu, const ShareSite& victim, const std::vector<std::string>& cgroups,
                         const GpuProcessMemory& p, const std::string& owner, const std::string& reason) {
  if (auto r = stop_process(cfg_.proc_root, p.pid, cgroups); !r) {
    log::error("reclaim: " + r.error().message);
    return false;
  }
  log::warn(text::cat("reclaim: stopped process ", p.pid, " of ", victim.id, " (", text::format_bytes(p.bytes), " on ",
                      gpu, ", past its request ", text::format_bytes(victim.request), ") for ", owner,
                      ", which is within its request", reason.empty() ? "" : "; swap not used: ", reason));
  ReclaimEvent e{static_cast<std::int64_t>(::time(nullptr)), gpu, victim.id, p.pid, p.bytes, owner};
  e.reason = reason;
  record_stop(log_, std::move(e), victim.key);
  log_dirty_ = true;
  save_log();
  wait_gone(gpu, p.pid);
  return true;
}

void Reclaimer::wait_gone(const std::string& gpu, std::int64_t pid) {
  for (int waited = 0; waited < kGoneWaitMs; waited += 5) {
    auto procs = view_.processes(gpu);
    if (!procs || std::none_of(procs->begin(), procs->end(), [&](const GpuProcessMemory& p) { return p.pid == pid; }))
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  log::warn(text::cat("reclaim: process ", pid, " still holds memory on ", gpu, " ", kGoneWaitMs, " ms after SIGKILL"));
}

void Reclaimer::check_regions(const std::string& gpu, const std::vector<ShareSite>& sites,
                              const std::vector<Reading>& readings) {
  std::vector<std::uint64_t> used;
  for (const auto& r : readings) used.push_back(r.used);
  auto procs = view_.processes(gpu);
  if (!procs) return;
  const Attribution a = attribute(sites, *procs, cfg_.proc_root);
  const auto shares = burst_shares(sites, used, a);
  for (std::size_t i = 0; i < sites.size(); ++i) {
    // A region not read (damaged, or not made yet) says nothing to contradict; a swapped share's
    // region still counts what the driver moved to host memory.
    const bool known =
        !a.cgroups[i].empty() && sites[i].device >= 0 && readings[i].ok && !swapped_.contains(sites[i].key);
    auto it = log_.flags.find(sites[i].key);
    if (known && region_disagrees(shares[i], cfg_.burst.context_allowance)) {
      if (it == log_.flags.end() || it->second.published != used[i] || it->second.held != shares[i].held) {
        if (it == log_.flags.end())
          log::warn(text::cat("reclaim: the usage region of ", sites[i].id, " says ", text::format_bytes(used[i]),
                              " and the driver sees ", text::format_bytes(shares[i].held), " on ", gpu,
                              ": flagged; the driver's view decides"));
        const std::int64_t since = it == log_.flags.end() ? ::time(nullptr) : it->second.since;
        log_.flags[sites[i].key] = ReclaimFlag{gpu, sites[i].id, used[i], shares[i].held, since};
        log_dirty_ = true;
      }
    } else if (it != log_.flags.end() && it->second.gpu_uuid == gpu) {
      log_.flags.erase(it);
      log_dirty_ = true;
    }
  }
}

void Reclaimer::answer_leftovers(const std::map<std::string, std::set<int>>& served) {
  for (auto it = regions_.begin(); it != regions_.end();) {
    Region& r = it->second;
    limits::RegionReading rd;
    auto ok = limits::read_region_reading(r.fd.get(), it->first, 0, *r.buf, rd, cfg_.proc_root);
    const auto s = served.find(it->first);
    if (ok && rd.reclaim_asked != rd.reclaim_answered && (s == served.end() || !s->second.contains(rd.reclaim_device)))
      ok = limits::answer_region(r.fd.get(), it->first, rd.reclaim_asked,
                                 static_cast<std::uint8_t>(ReclaimAnswer::none));
    it = ok ? std::next(it) : regions_.erase(it);
  }
}

void Reclaimer::save_log() {
  if (!log_dirty_) return;
  if (auto r = save_reclaim_log(reclaim_log_path(cfg_), log_); !r) {
    log::warn("reclaim: " + r.error().message);
    return;
  }
  log_dirty_ = false;
}

Result<bool> Reclaimer::pass() {
  auto state = Ledger(LedgerOptions::from(cfg_)).read();
  if (!state) return std::unexpected(state.error());
  if (!has_burst_booking(*state)) return false;
  const std::uint32_t beat = reclaimer_beat_now();
  const bool check = passes_++ % kCheckEveryPasses == 0;
  std::set<std::string> live, keys;
  std::map<std::string, std::set<int>> served;
  for (const auto& [gpu, sites] : burst_sites(*state, cfg_)) {
    const std::uint64_t total = gpu_memory(inv_, gpu);
    if (total == 0) continue;
    for (const auto& s : sites) {
      keys.insert(s.key);
      live.insert(s.region);
      served[s.region].insert(s.device);
    }
    recover_swaps(sites);
    const auto readings = read_sites(sites);
    publish(gpu, sites, readings, total, beat);
    answer(gpu, sites, readings, total);
    swap_in(gpu, sites, readings, total);
    if (check) check_regions(gpu, sites, readings);
  }
  forget_swaps(keys);
  std::erase_if(regions_, [&](const auto& kv) { return !live.contains(kv.first); });
  if (std::erase_if(log_.untold, [&](const auto& kv) { return !keys.contains(kv.first); }) != 0) log_dirty_ = true;
  std::erase_if(damaged_, [&](const std::string& path) { return !live.contains(path); });
  answer_leftovers(served);
  save_log();
  return true;
}

}  // namespace gpufrac::reclaim
