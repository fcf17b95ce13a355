// `gpufrac reclaim run|start` (hidden from --help): the burst reclaimer (reclaim/reclaimer.hpp,
// docs/architecture.md "Burstable memory").
//   gpufrac reclaim start   what the front-ends run after booking a share with a burst limit: returns
//                           at once; when no reclaimer holds <state-dir>/reclaimer.lock, a detached
//                           one (its own session, stdio on /dev/null, no inherited descriptor) runs.
//   gpufrac reclaim run     the reclaimer in the foreground, until no booking has a burst limit.
//   gpufrac reclaim keep    its keeper (reclaim/reclaim_keeper.hpp), which every reclaimer starts:
//                           waits for the reclaimer's lock and takes over if it dies.
// One per node (reclaim/reclaim_start.hpp): the reclaimer holds flock(reclaimer.lock), which holds its
// pid, while it runs; the kernel drops it when it dies, and its keeper takes over at once. It leaves only when the
// ledger, read under its lock, holds no burst booking: it lets reclaimer.lock go while it still holds the ledger's, so
// a booking made meanwhile either kept it running or finds it gone and starts a new one.
#include <cstdio>

#include "cli/context.hpp"
#include "core/log.hpp"
#include "reclaim/reclaim_keeper.hpp"
#include "reclaim/reclaim_start.hpp"

namespace gpufrac::cli {

namespace {

int run(Context& ctx) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  log::init(cfg->log, "gpufrac-reclaim");
  auto code = reclaim::run_reclaimer_here(*cfg);
  if (!code) return ctx.fail(code.error());
  if (*code < 0) std::printf("a reclaimer runs already (%s)\n", reclaim::reclaimer_lock_path(*cfg).c_str());
  return *code < 0 ? 0 : *code;
}

int keep(Context& ctx) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  log::init(cfg->log, "gpufrac-reclaim");
  auto code = reclaim::run_keeper(*cfg);
  return code ? *code : ctx.fail(code.error());
}

int start(Context& ctx) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto started = reclaim::start_detached_reclaimer(*cfg);
  if (!started) return ctx.fail(started.error());
  std::printf(*started ? "the reclaimer started\n" : "a reclaimer runs\n");
  return 0;
}

}  // namespace

void add_reclaim_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("reclaim", "The burst reclaimer (run by the front-ends)");
  cmd->require_subcommand(0, 1);
  cmd->add_subcommand("run", "Run the reclaimer in the foreground while a booking has a burst limit")->callback([&ctx] {
    ctx.exit_code = run(ctx);
  });
  cmd->add_subcommand("start", "Start a detached reclaimer unless one runs")->callback([&ctx] {
    ctx.exit_code = start(ctx);
  });
  cmd->add_subcommand("keep", "Wait beside the reclaimer and take over when it stops")->callback([&ctx] {
    ctx.exit_code = keep(ctx);
  });
  cmd->group("");  // hidden from gpufrac --help (the front-ends start it); set last, as `ledger` does
}

}  // namespace gpufrac::cli
