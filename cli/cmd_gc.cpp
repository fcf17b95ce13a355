// `gpufrac gc [--json]`: reclaims bookings whose process is gone (pid + start time) or that stayed
// pending past allocation.pending-timeout, removes temp files of killed writers, and says what
// it did.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/table.hpp"
#include "core/ledger.hpp"
#include "core/ledger_json.hpp"
#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

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
  std::string out = json ? to_json(*report).dump(2) + "\n" : render(*report);
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
