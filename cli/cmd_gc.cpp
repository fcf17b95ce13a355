// `gpufrac gc [--json]`: reclaims bookings whose process is gone (pid + start time) or that stayed
// pending past allocation.pending-timeout, removes temp files of killed writers and the files of
// containers without bookings, drops dead processes from accounting regions, and says what it did.
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/table.hpp"
#include "core/container_state.hpp"
#include "core/ledger.hpp"
#include "core/ledger_json.hpp"
#include "core/text.hpp"
#include "limits/host/region_file.hpp"

namespace gpufrac::cli {

namespace {

// What gc does beyond the ledger: per-container directories whose container holds no booking any
// more are removed, and the accounting regions of booked containers drop their dead processes.
struct FilesReport {
  std::vector<std::string> dirs_removed;
  unsigned dead_slots = 0;
};

Result<FilesReport> collect_files(const Config& cfg) {
  auto state = Ledger(LedgerOptions::from(cfg)).read();
  if (!state) return std::unexpected(state.error());
  std::set<std::string> booked;
  for (const auto& e : state->entries) booked.insert(e.container_id);
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
  return out;
}

std::string render(const FilesReport& f) {
  std::string out;
  if (!f.dirs_removed.empty()) out += text::cat("Removed ", f.dirs_removed.size(), " container director(ies) without bookings.\n");
  if (f.dead_slots) out += text::cat("Reclaimed ", f.dead_slots, " dead process slot(s) from accounting regions.\n");
  return out;
}

std::string render(const GcReport& r) {
  std::string out;
  if (r.reclaimed.empty()) {
    out = "Nothing to reclaim.\n";
  } else {
    Table t({"CONTAINER", "DEVICE", "BYTES", "REQUEST", "PID", "WHY"});
    for (const auto& rc : r.reclaimed) {
      const LedgerEntry& e = rc.entry;
      t.add({e.container_id, e.device_uuid, text::format_bytes(e.bytes), e.request,
             e.pending() ? "-" : text::cat(e.pid), rc.why});
    }
    out = text::cat("Reclaimed ", r.reclaimed.size(), r.reclaimed.size() == 1 ? " booking" : " bookings", ":\n") +
          t.render();
  }
  if (!r.temp_files_removed.empty())
    out += text::cat("Removed ", r.temp_files_removed.size(), " stale temp file(s).\n");
  return out + text::cat(r.kept, r.kept == 1 ? " booking" : " bookings", " kept.\n");
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

int run_gc(Context& ctx, bool json) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto report = Ledger(LedgerOptions::from(*cfg)).gc();
  if (!report) return ctx.fail(report.error());
  auto files = collect_files(*cfg);
  if (!files) return ctx.fail(files.error());
  nlohmann::json j = to_json(*report);
  j["container_dirs_removed"] = files->dirs_removed;
  j["dead_slots_reclaimed"] = files->dead_slots;
  std::string out = json ? j.dump(2) + "\n" : render(*report) + render(*files);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void add_gc_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("gc", "Reclaim bookings of exited containers and expired pending bookings");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([&ctx, json] { ctx.exit_code = run_gc(ctx, *json); });
}

}  // namespace gpufrac::cli
