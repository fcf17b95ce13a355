// `gpufrac status [--json] [--no-trunc] [--watch [SECONDS]]`: every GPU and MIG instance with its
// memory (used, reserved, free, total) and a bar of its shares, then each share (container,
// request, reserved and live used bytes from its accounting region, pid, state, age). Reads only
// (cli/node_view.hpp). --watch redraws every SECONDS (default 2) in place on a terminal, and
// prints one timestamped snapshot after another elsewhere, until interrupted.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/node_view.hpp"
#include "cli/status_burst.hpp"
#include "cli/status_render.hpp"
#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

struct StatusOptions {
  bool json = false;
  bool no_trunc = false;
  std::vector<std::string> watch;  // present (maybe empty) with --watch
};

constexpr double kDefaultWatchSeconds = 2;

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

Result<std::string> snapshot(const Config& cfg, const StatusOptions& o, const StatusStyle& style) {
  auto node = read_node(cfg, static_cast<std::int64_t>(std::time(nullptr)));
  if (!node) return std::unexpected(node.error());
  const ReclaimerState reclaimer{node->reclaimer_pid, node->burst_reclaim};
  const bool bursting = std::any_of(node->ledger.entries.begin(), node->ledger.entries.end(),
                                    [](const LedgerEntry& e) { return e.limit_bytes != 0; });
  if (!o.json)
    return render_status(node->report, style) + render_reclaims(node->reclaims, node->inventory, reclaimer, bursting);
  nlohmann::json j = status_json(node->report);
  if (node->reclaim_log || bursting) j["reclaims"] = reclaims_json(node->reclaims, node->inventory, reclaimer);
  return j.dump(2) + "\n";
}

Result<double> watch_seconds(const StatusOptions& o) {
  if (o.watch.empty() || o.watch[0].empty()) return kDefaultWatchSeconds;
  char* end = nullptr;
  const double s = std::strtod(o.watch[0].c_str(), &end);
  if (*end != '\0' || !std::isfinite(s) || s < 0.1 || s > 86400)
    return user_error("--watch: " + text::quote(o.watch[0]) + " is not an interval; use seconds from 0.1 to 86400");
  return s;
}

std::string local_time() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

// Redraws in place on a terminal: cursor home, each line cleared to its end, the rest of the
// screen cleared; elsewhere the snapshots follow each other, each under its own header.
int watch(Context& ctx, const Config& cfg, const StatusOptions& o, const StatusStyle& style, double seconds) {
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  for (bool first = true;; first = false) {
    auto text = snapshot(cfg, o, style);
    std::string body = text ? *text : "gpufrac: " + text.error().message + "\n";
    std::string head = text::cat("Every ", text::format_fixed(seconds, 1), "s: gpufrac status  ", local_time(), "\n\n");
    if (tty) {
      std::string screen = "\033[H";
      for (const auto& line : text::split(head + body, '\n')) screen += line + "\033[K\n";
      print(screen.substr(0, screen.size() - 1) + "\033[J");
    } else {
      print((first ? "" : "\n") + head + body);
    }
    if (!text && text.error().kind == ErrorKind::user) return ctx.fail(text.error());
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
}

int run_status(Context& ctx, const StatusOptions& o, bool watching) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  StatusStyle style;
  style.colour = !o.json && colour_wanted(STDOUT_FILENO);
  style.no_trunc = o.no_trunc;
  if (watching) {
    auto seconds = watch_seconds(o);
    if (!seconds) return ctx.fail(seconds.error());
    return watch(ctx, *cfg, o, style, *seconds);
  }
  auto text = snapshot(*cfg, o, style);
  if (!text) return ctx.fail(text.error());
  print(*text);
  return 0;
}

}  // namespace

void add_status_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("status", "Show each GPU's memory (used, reserved, free) and its shares");
  auto o = std::make_shared<StatusOptions>();
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag("--no-trunc", o->no_trunc, "Show full container ids and UUIDs (default: cut to 12 characters)");
  auto* json = cmd->get_option("--json");
  auto* watch = cmd->add_option("--watch", o->watch, "Redraw every SECONDS (default 2) until interrupted")
                    ->expected(0, 1)
                    ->type_name("[SECONDS]")
                    ->excludes(json);
  cmd->callback([&ctx, o, watch] { ctx.exit_code = run_status(ctx, *o, watch->count() > 0); });
}

}  // namespace gpufrac::cli
