#include "nvml/driver_limit_apply.hpp"

#include <algorithm>

#include "core/enforcement/cgroup_v2.hpp"
#include "core/fault.hpp"
#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_file.hpp"
#include "core/ledger/ledger_limits.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "nvml/driver_limits.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac {

namespace {

bool of_target(const LedgerEntry& e, const LimitTarget& t) {
  return e.container_id == t.container_id && e.claim_owned() == t.claim && (t.claim || e.instance == t.instance);
}

Result<std::vector<LedgerEntry>> bookings_of(const Config& cfg, const LimitTarget& t) {
  Ledger ledger(LedgerOptions::from(cfg));
  return t.claim ? ledger.bookings_of_claim(t.container_id) : ledger.bookings_of(t.container_id, t.instance);
}

// The cgroup the target's limits go on ("" off cgroup v2: the plan needs none there).
Result<std::string> target_cgroup(const Config& cfg, const LimitTarget& t, CgroupLayout layout) {
  if (layout != CgroupLayout::v2) return std::string();
  auto dir = process_cgroup_dir(cfg.proc_root, cfg.cgroup_root, t.pid);
  if (!dir || !t.claim) return dir;
  return parent_cgroup_dir(*dir, cfg.cgroup_root);
}

Result<std::vector<PlannedLimit>> plan_for(const Config& cfg, const LimitTarget& t) {
  auto inv = inventory_for_reading(cfg);
  if (!inv) return std::unexpected(inv.error());
  if (!driver_limits_considered(*inv, cfg)) return std::vector<PlannedLimit>{};
  auto bookings = bookings_of(cfg, t);
  if (!bookings) return std::unexpected(bookings.error());
  std::erase_if(*bookings, [](const LedgerEntry& e) { return e.driver_limit.has_value(); });  // set already
  const CgroupLayout layout = detect_cgroup_layout(cfg.cgroup_root);
  auto cgroup = target_cgroup(cfg, t, layout);
  if (!cgroup) return std::unexpected(cgroup.error());
  return plan_driver_limits(*bookings, *inv, layout, cfg, *cgroup);
}

// Records (or, with `limits` empty of a key, drops) the planned limits in their entries.
Result<> record(const Config& cfg, const LimitTarget& t, const std::vector<PlannedLimit>& plan, bool set) {
  auto r = Ledger(LedgerOptions::from(cfg)).update([&](LedgerState& s) -> Result<bool> {
    for (const auto& p : plan) {
      auto it = std::find_if(s.entries.begin(), s.entries.end(),
                             [&](const LedgerEntry& e) { return of_target(e, t) && e.device_key == p.device_key; });
      if (it == s.entries.end()) {
        if (set) return user_error(text::cat(t.container_id, " has no booking of ", p.gpu_uuid, " any more"));
        continue;
      }
      it->driver_limit = set ? std::optional<DriverLimit>(p.limit) : std::nullopt;
      if (set) drop_limit_to_clear(s, p.gpu_uuid, p.limit.cgroup);  // this limit replaces an old one there
    }
    return true;
  });
  return r ? Result<>{} : std::unexpected(r.error());
}

// After a failed set: what this call set is cleared and the records dropped; the record of a limit
// whose clear fails stays, and the booking's release moves it to limits_to_clear (gc retries).
void undo(const Config& cfg, const LimitTarget& t, const LimitDriver& drv, const std::vector<PlannedLimit>& plan,
          std::size_t set_count) {
  std::vector<PlannedLimit> drop;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (i < set_count)
      if (auto r = drv.clear(plan[i].gpu_uuid, plan[i].limit); !r) {
        log::warn("driver limit: " + r.error().message);
        continue;
      }
    drop.push_back(plan[i]);
  }
  if (auto r = record(cfg, t, drop, false); !r) log::warn("driver limit: " + r.error().message);
}

// Sets every planned limit; Ok(false) when the call is absent (nothing set).
Result<bool> set_all(const Config& cfg, const LimitTarget& t, const LimitDriver& drv,
                     const std::vector<PlannedLimit>& plan) {
  for (std::size_t i = 0; i < plan.size(); ++i) {
    auto r = drv.set(plan[i].gpu_uuid, plan[i].limit);
    if (r && *r) continue;
    undo(cfg, t, drv, plan, i);
    if (!r) return std::unexpected(r.error());
    return false;
  }
  return true;
}

std::string absent_note(const Config& cfg) {
  return text::cat("the driver (", cfg.nvml.library, ") has no per-cgroup memory limits (r", kMemoryLimitsDriverMajor,
                   "+); the shim alone holds the shares");
}

}  // namespace

std::string driver_limits_lock_path(const Config& cfg) {
  return cfg.state_dir + "/driver-limits.lock";
}

Result<AppliedLimits> apply_driver_limits(const Config& cfg, const LimitTarget& t) {
  auto plan = plan_for(cfg, t);
  if (!plan) return std::unexpected(plan.error());
  if (plan->empty()) return AppliedLimits{};
  auto lock = LedgerLock::acquire(driver_limits_lock_path(cfg), cfg.lock_timeout_s * 1000, cfg.proc_root,
                                  "the driver-limit lock");
  if (!lock) return std::unexpected(lock.error());
  auto drv = LimitDriver::open(cfg);
  if (!drv) return std::unexpected(drv.error());
  auto done = Result<bool>(false);
  if (drv->available()) {
    if (auto r = record(cfg, t, *plan, true); !r) return std::unexpected(r.error());
    fault::point("driver-limit-after-record");
    done = set_all(cfg, t, *drv, *plan);
    if (!done) return std::unexpected(done.error());
  }
  if (!*done) {  // the call is absent: nothing was set, no record is left
    if (cfg.enforcement == Enforcement::auto_detect) return AppliedLimits{{}, absent_note(cfg)};
    return user_error(
        text::cat("enforcement: driver: the driver (", cfg.nvml.library,
                  ") has no per-cgroup memory limits; set enforcement: auto to let the shim hold the shares"));
  }
  fault::point("driver-limit-after-set");
  return AppliedLimits{std::move(*plan), ""};
}

}  // namespace gpufrac
