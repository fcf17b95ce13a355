// `gpufrac gc [--dry-run] [--json]`: reclaims bookings whose process is gone (pid + start time) or
// that stayed pending past allocation.pending-timeout, removes temp files of killed writers and the
// files of containers without bookings, drops dead processes from accounting regions, sets
// ledger.reserve to what the ledger needs (core/ledger/ledger_file.hpp: not garbage), and says what it
// did. On dynamic-MIG GPUs it also undoes half-made instances and destroys instances idle for
// mig.idle-timeout (nvml/mig_reclaim.hpp), and lists those kept for reuse. The driver limits of the
// bookings it reclaims, and of those released before their limit was cleared, are cleared
// (nvml/driver_limit_apply.hpp). While a booking has a burst limit it makes sure the burst
// reclaimer runs; once none has, it removes the reclaimer's files (reclaim/reclaim_start.hpp).
// --dry-run says what it would do from what `status` reads
// (cli/gc_dry_run.hpp), and writes nothing.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "cdi/spec_write.hpp"
#include "cli/context.hpp"
#include "cli/gc_dry_run.hpp"
#include "cli/status_model.hpp"
#include "cli/table.hpp"
#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/text.hpp"
#include "limits/host/region_file.hpp"
#include "nvml/driver_limit_apply.hpp"
#include "nvml/inventory_cache.hpp"
#include "nvml/mig_reclaim.hpp"
#include "nvml/mps_daemon.hpp"
#include "nvml/mps_keeper.hpp"
#include "reclaim/reclaim_start.hpp"
#include "state/compute_slots.hpp"
#include "state/container_state.hpp"

namespace gpufrac::cli {

namespace {

Result<FilesReport> collect_files(const Config& cfg) {
  auto state = Ledger(LedgerOptions::from(cfg)).read();
  if (!state) return std::unexpected(state.error());
  std::set<std::string> booked;
  for (const auto& e : state->entries) booked.insert(container_key(e));
  FilesReport out;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(cfg.state_dir + "/containers", ec)) {
    const std::string id = d.path().filename();
    if (!booked.contains(id)) {
      if (auto r = remove_container_files(cfg, id); r) out.dirs_removed.push_back(id);
      continue;
    }
    if (auto n = limits::reclaim_region(container_files(cfg, id).usage, cfg.proc_root)) out.dead_slots += *n;
  }
  auto freed = sweep_compute_slots(cfg, std::vector<std::string>(booked.begin(), booked.end()), kComputeSlotMinAgeS);
  if (!freed) return std::unexpected(freed.error());
  out.compute_slots_freed = std::move(freed->freed);
  out.compute_arbiters_removed = std::move(freed->removed);
  out.compute_arbiters_repaired = std::move(freed->repaired);
  return out;
}

std::string render(const FilesReport& f, bool dry) {
  std::string out;
  if (!f.dirs_removed.empty())
    out += text::cat(dry ? "Would remove " : "Removed ", f.dirs_removed.size(),
                     " container director(ies) without bookings.\n");
  if (f.dead_slots)
    out += text::cat(dry ? "Would reclaim " : "Reclaimed ", f.dead_slots,
                     " dead process slot(s) from accounting regions.\n");
  if (!f.compute_slots_freed.empty())
    out +=
        text::cat(dry ? "Would free " : "Freed ", f.compute_slots_freed.size(), " compute slot(s) without bookings.\n");
  if (!f.compute_arbiters_removed.empty())
    out += text::cat("Removed the compute arbiters of ", f.compute_arbiters_removed.size(),
                     " GPU(s) without compute shares.\n");
  for (const auto& r : f.compute_arbiters_repaired) out += "Repaired the compute lease file of " + r + ".\n";
  return out;
}

std::string gpu_text(const LedgerEntry& e) {
  return e.mig ? text::cat(e.gpu_index, " gi ", e.mig->gi, " ci ", e.mig->ci) : text::cat(e.gpu_index);
}

std::string render(const GcReport& r, bool dry) {
  std::string out;
  if (r.reclaimed.empty()) {
    out = "Nothing to reclaim.\n";
  } else {
    Table t({"CONTAINER", "GPU", "RESERVED", "REQUEST", "PID", "WHY"});
    for (const auto& rc : r.reclaimed) {
      const LedgerEntry& e = rc.entry;
      t.add({e.container_id, gpu_text(e), text::format_bytes(e.bytes), e.request, e.pending() ? "-" : text::cat(e.pid),
             rc.why});
    }
    out = text::cat(dry ? "Would reclaim " : "Reclaimed ", r.reclaimed.size(),
                    r.reclaimed.size() == 1 ? " booking" : " bookings", ":\n") +
          t.render();
  }
  if (!r.temp_files_removed.empty())
    out += text::cat(dry ? "Would remove " : "Removed ", r.temp_files_removed.size(), " stale temp file(s).\n");
  return out + text::cat(r.kept, r.kept == 1 ? " booking" : " bookings", dry ? " would be kept.\n" : " kept.\n");
}

nlohmann::json to_json(const GcReport& r) {
  nlohmann::json reclaimed = nlohmann::json::array();
  for (const auto& rc : r.reclaimed) {
    nlohmann::json j = entry_to_json(rc.entry);
    j["why"] = rc.why;
    reclaimed.push_back(std::move(j));
  }
  return {{"reclaimed", std::move(reclaimed)}, {"temp_files_removed", r.temp_files_removed}, {"kept", r.kept}};
}

// Dynamic MIG: what was destroyed for being idle too long, and what stays for reuse.
std::string render(const MigReclaimReport& m, std::uint32_t timeout_s, bool dry) {
  std::string out;
  for (const auto& n : m.notes) out += "MIG: " + n + "\n";
  if (!m.destroyed.empty()) {
    Table t({"GPU", "GI", "CI", "NAME", "UUID", "IDLE"});
    for (const auto& i : m.destroyed)
      t.add(
          {text::cat(i.gpu_index), text::cat(i.gi), text::cat(i.ci), "MIG " + i.profile, i.uuid, format_age(i.idle_s)});
    out += text::cat(dry ? "Would destroy " : "Destroyed ", m.destroyed.size(), " idle MIG instance(s) (idle ",
                     format_age(timeout_s), " or longer, mig.idle-timeout):\n") +
           t.render();
  }
  if (!m.idle.empty()) {
    Table t({"GPU", "GI", "CI", "NAME", "UUID", "STATE", "IDLE"});
    for (const auto& i : m.idle)
      t.add({text::cat(i.gpu_index), text::cat(i.gi), text::cat(i.ci), "MIG " + i.profile, i.uuid, "idle",
             format_age(i.idle_s)});
    out += "Idle dynamic MIG instances kept for reuse:\n" + t.render();
  }
  return out;
}

nlohmann::json idle_json(const std::vector<IdleMigInstance>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& i : list)
    out.push_back({{"gpu_index", i.gpu_index},
                   {"gpu_uuid", i.gpu_uuid},
                   {"uuid", i.uuid},
                   {"profile", i.profile},
                   {"gi", i.gi},
                   {"ci", i.ci},
                   {"start", i.placement.start},
                   {"state", "idle"},
                   {"idle_s", i.idle_s}});
  return out;
}

std::string render(const LimitsReport& l, bool dry) {
  std::string out;
  for (const auto& r : l.cleared)
    out += text::cat(dry ? "Would clear" : "Cleared", " the driver limit of ", r.owner, " on ", r.gpu_uuid, " (",
                     r.limit.cgroup, ").\n");
  for (const auto& e : l.errors) out += "Driver limit kept: " + e + "\n";
  return out;
}

// SM sharing: "Stopped the MPS daemon of GPU 0 (idle 612 s; compute mode restored)."
std::string render(const MpsReclaim& m, bool dry) {
  std::string out;
  for (const auto& n : m.notes) out += "MPS: " + n + "\n";
  for (const auto& s : m.stopped)  // "stopped the MPS daemon of ..."
    out += (dry ? "Would stop" + s.substr(std::string_view("stopped").size()) : "S" + s.substr(1)) + ".\n";
  for (const auto& k : m.kept) out += text::cat("K", k.substr(1), ".\n");
  return out;
}

// The MPS daemons idle past their timeout, stopped; nothing to read (not even the inventory) on a
// node that never ran one.
Result<MpsReclaim> reclaim_mps(const Config& cfg) {
  Ledger ledger(LedgerOptions::from(cfg));
  auto state = ledger.read();
  if (!state) return std::unexpected(state.error());
  if (state->mps.empty() && mps_recorded_gpus(cfg).empty()) return MpsReclaim{};
  auto inv = inventory_for_allocation(cfg);
  if (!inv) return std::unexpected(inv.error());
  return reclaim_idle_mps(cfg, *inv, ledger);
}

std::string report_text(const GcPlan& p, const Config& cfg, bool json, bool dry) {
  if (!json)
    return render(p.ledger, dry) + render(p.files, dry) + render(p.mig, cfg.mig.idle_timeout_s, dry) +
           render(p.limits, dry) + render(p.mps, dry);
  nlohmann::json j = to_json(p.ledger);
  j["dry_run"] = dry;
  j["container_dirs_removed"] = p.files.dirs_removed;
  j["dead_slots_reclaimed"] = p.files.dead_slots;
  j["compute_slots_freed"] = p.files.compute_slots_freed;
  j["compute_arbiters_removed"] = p.files.compute_arbiters_removed;
  j["compute_arbiters_repaired"] = p.files.compute_arbiters_repaired;
  j["mig_destroyed"] = idle_json(p.mig.destroyed);
  j["mig_idle"] = idle_json(p.mig.idle);
  j["mig_notes"] = p.mig.notes;
  nlohmann::json cleared = nlohmann::json::array();
  for (const auto& r : p.limits.cleared) cleared.push_back(limit_to_clear_to_json(r));
  j["driver_limits_cleared"] = cleared;
  j["driver_limit_errors"] = p.limits.errors;
  j["mps_stopped"] = p.mps.stopped;
  j["mps_kept"] = p.mps.kept;
  j["mps_notes"] = p.mps.notes;
  return j.dump(2) + "\n";
}

int run_gc(Context& ctx, bool json, bool dry_run) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  GcPlan plan;
  if (dry_run) {
    auto p = plan_gc(*cfg, now);
    if (!p) return ctx.fail(p.error());
    plan = std::move(*p);
  } else {
    auto report = Ledger(LedgerOptions::from(*cfg)).gc();
    if (!report) return ctx.fail(report.error());
    auto files = collect_files(*cfg);
    if (!files) return ctx.fail(files.error());
    // After the files: removing container directories may be what makes room for it.
    if (auto r = Ledger(LedgerOptions::from(*cfg)).fit_reserve(); !r)
      std::fprintf(stderr, "gpufrac: warning: %s\n", r.error().message.c_str());
    auto mig = reclaim_idle_mig(*cfg, now, cdi::spec_refresher(*cfg));
    if (!mig) return ctx.fail(mig.error());
    auto limits = clear_driver_limits(*cfg);
    if (!limits) return ctx.fail(limits.error());
    auto mps = reclaim_mps(*cfg);
    if (!mps) return ctx.fail(mps.error());
    plan = GcPlan{
        std::move(*report), std::move(*files), std::move(*mig), {limits->cleared, limits->errors}, std::move(*mps)};
  }
  std::string out = report_text(plan, *cfg, json, dry_run);
  // The burst reclaimer: running while a booking has a burst limit, its files gone once none has.
  if (!dry_run)
    if (auto state = Ledger(LedgerOptions::from(*cfg)).read())
      if (auto line = reclaim::tidy_reclaimer(*cfg, *state); !line.empty() && !json) out += line + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!plan.limits.errors.empty()) return ctx.fail(internal_error(plan.limits.errors.front()).error());
  return 0;
}

}  // namespace

void add_gc_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("gc", "Reclaim bookings of exited containers and expired pending bookings");
  auto json = std::make_shared<bool>(false);
  auto dry_run = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->add_flag("--dry-run", *dry_run, "Say what would be reclaimed; change nothing");
  cmd->callback([&ctx, json, dry_run] { ctx.exit_code = run_gc(ctx, *json, *dry_run); });
}

}  // namespace gpufrac::cli
