// clear_driver_limits (driver_limit_apply.hpp): the records of limits_to_clear, cleared through the
// driver on their cgroup, made again for the calls when the runtime removed it already.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_file.hpp"
#include "core/ledger/ledger_limits.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "nvml/driver_limit_apply.hpp"
#include "nvml/driver_limits.hpp"

namespace gpufrac {

namespace {

// Makes the missing directories of `dir` below cgroup-root (never cgroup-root itself) and returns
// them deepest first, for removal after the calls.
std::vector<std::string> make_missing(const std::string& dir, const std::string& cgroup_root) {
  std::vector<std::string> missing;
  for (std::string d = dir; d.size() > cgroup_root.size() && d.starts_with(cgroup_root + "/");
       d = d.substr(0, d.rfind('/'))) {
    struct stat st {};
    if (::stat(d.c_str(), &st) == 0) break;
    missing.push_back(d);
  }
  std::vector<std::string> made;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) != 0 && errno != EEXIST) break;
    made.insert(made.begin(), *it);
  }
  return made;
}

// Clears one record's limit, on its cgroup made again when it is gone.
Result<> clear_one(const Config& cfg, const LimitDriver& drv, const LimitToClear& rec) {
  const auto made = make_missing(rec.limit.cgroup, cfg.cgroup_root);
  auto r = drv.clear(rec.gpu_uuid, rec.limit);
  for (const auto& d : made)
    if (::rmdir(d.c_str()) != 0)
      log::warn(text::cat("driver limit: cannot remove ", d, " again: ", std::strerror(errno)));
  return r;
}

bool same(const LimitToClear& a, const LimitToClear& b) {
  return a.gpu_uuid == b.gpu_uuid && a.limit == b.limit;
}

// Drops the records handled (unless a booking took the cgroup meanwhile and re-recorded it).
Result<> drop_records(const Config& cfg, const std::vector<LimitToClear>& handled) {
  auto r = Ledger(LedgerOptions::from(cfg)).update([&](LedgerState& s) -> Result<bool> {
    const auto before = s.limits_to_clear.size();
    std::erase_if(s.limits_to_clear, [&](const LimitToClear& rec) {
      return std::any_of(handled.begin(), handled.end(), [&](const LimitToClear& h) { return same(h, rec); });
    });
    return s.limits_to_clear.size() != before;
  });
  return r ? Result<>{} : std::unexpected(r.error());
}

}  // namespace

Result<ClearReport> clear_driver_limits(const Config& cfg) {
  Ledger ledger(LedgerOptions::from(cfg));
  auto state = ledger.read();
  if (!state) return std::unexpected(state.error());
  if (state->limits_to_clear.empty()) return ClearReport{};
  auto lock = LedgerLock::acquire(driver_limits_lock_path(cfg), cfg.lock_timeout_s * 1000, cfg.proc_root,
                                  "the driver-limit lock");
  if (!lock) return std::unexpected(lock.error());
  state = ledger.read();  // as it is under the lock: no limit is set meanwhile
  if (!state) return std::unexpected(state.error());
  auto drv = LimitDriver::open(cfg);
  if (!drv) return std::unexpected(drv.error().wrap("while clearing driver limits"));
  ClearReport report;
  for (const auto& rec : state->limits_to_clear) {
    if (limit_held(*state, rec.gpu_uuid, rec.limit.cgroup)) {
      report.dropped.push_back(rec);
    } else if (auto r = clear_one(cfg, *drv, rec); r) {
      report.cleared.push_back(rec);
    } else {
      report.errors.push_back(r.error().message);
    }
  }
  std::vector<LimitToClear> handled = report.cleared;
  handled.insert(handled.end(), report.dropped.begin(), report.dropped.end());
  if (auto r = drop_records(cfg, handled); !r) return std::unexpected(r.error());
  return report;
}

}  // namespace gpufrac
