// `gpufrac ledger reserve|attach|release`: the ledger operations the hook, the runtime wrapper and
// the CDI hooks perform, runnable from a shell for debugging and tests. Hidden from --help.
//   gpufrac ledger reserve --container ID --annotation gpufrac.io/fraction=0.25 [--pid N] [--json]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "core/ledger.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"

namespace gpufrac::cli {

namespace {

struct ReserveOptions {
  std::string container, device_key, source = "hook";
  std::vector<std::string> annotations;  // KEY=VALUE
  std::int64_t pid = 0;
  bool json = false;
};

Result<Request> request_from(const std::vector<std::string>& pairs, bool aliases) {
  Annotations a;
  for (const auto& kv : pairs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) return user_error("--annotation " + text::quote(kv) + ": use KEY=VALUE");
    a[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto r = parse_request(a, aliases);
  if (!r) return std::unexpected(r.error());
  if (!*r) return user_error("no gpufrac request in the annotations; use e.g. --annotation gpufrac.io/fraction=0.25");
  return **r;
}

nlohmann::json grant_json(const Booking& b) {
  const Grant& g = b.grant;
  nlohmann::json mig = nullptr;
  if (g.mig) mig = {{"gi", g.mig->gi}, {"ci", g.mig->ci}, {"profile", g.mig->profile}};
  return {{"device_uuid", g.device_uuid},
          {"gpu_index", g.gpu_index},
          {"gpu_uuid", g.gpu_uuid},
          {"mig", mig},
          {"bytes", g.bytes},
          {"exclusive", g.exclusive},
          {"reason", g.reason},
          {"existing", b.existing},
          {"reclaimed", b.reclaimed.size()}};
}

int run_reserve(Context& ctx, const ReserveOptions& o) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto request = request_from(o.annotations, cfg->aliases);
  if (!request) return ctx.fail(request.error());
  auto source = booking_source_from(o.source);
  if (!source) return ctx.fail(user_error("--source " + text::quote(o.source) + ": use hook, wrapper or cdi").error());
  auto inv = inventory_for_allocation(*cfg);
  if (!inv) return ctx.fail(inv.error());
  ReserveArgs args{o.container, o.device_key, *request, *source, o.pid, std::nullopt};
  auto booking = Ledger(LedgerOptions::from(*cfg)).reserve(args, *inv, cfg->allocation);
  if (!booking) return ctx.fail(booking.error());
  if (o.json) {
    std::printf("%s\n", grant_json(*booking).dump().c_str());
  } else {
    std::printf("%s %s on %s for %s: %s\n", booking->existing ? "already booked" : "booked",
                text::format_bytes(booking->grant.bytes).c_str(), booking->grant.device_uuid.c_str(),
                o.container.c_str(), booking->grant.reason.c_str());
  }
  return 0;
}

int run_attach(Context& ctx, const std::string& container, std::int64_t pid) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto entries = Ledger(LedgerOptions::from(*cfg)).attach(container, pid);
  if (!entries) return ctx.fail(entries.error());
  std::printf("attached pid %lld to %zu booking(s) of %s\n", static_cast<long long>(pid), entries->size(),
              container.c_str());
  return 0;
}

int run_release(Context& ctx, const std::string& container) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto removed = Ledger(LedgerOptions::from(*cfg)).release(container);
  if (!removed) return ctx.fail(removed.error());
  std::printf("released %zu booking(s) of %s\n", removed->size(), container.c_str());
  return 0;
}

void add_reserve(CLI::App& ledger, Context& ctx) {
  auto o = std::make_shared<ReserveOptions>();
  auto* cmd = ledger.add_subcommand("reserve", "Book a device for a container");
  cmd->add_option("--container", o->container, "Container id")->required();
  cmd->add_option("--device-key", o->device_key, "Device key (several devices of one container)");
  cmd->add_option("--annotation", o->annotations, "Request annotation KEY=VALUE (repeatable)")->required();
  cmd->add_option("--pid", o->pid, "Host pid of the container (0 = pending)");
  cmd->add_option("--source", o->source, "hook, wrapper or cdi");
  cmd->add_flag("--json", o->json, "Print the grant as JSON");
  cmd->callback([&ctx, o] { ctx.exit_code = run_reserve(ctx, *o); });
}

}  // namespace

void add_ledger_command(CLI::App& app, Context& ctx) {
  auto* ledger = app.add_subcommand("ledger", "Ledger operations for debugging and tests");
  ledger->group("");  // hidden from --help
  ledger->require_subcommand(1);
  add_reserve(*ledger, ctx);
  auto container = std::make_shared<std::string>();
  auto pid = std::make_shared<std::int64_t>(0);
  auto* attach = ledger->add_subcommand("attach", "Give a container's pending bookings its pid");
  attach->add_option("--container", *container, "Container id")->required();
  attach->add_option("--pid", *pid, "Host pid")->required();
  attach->callback([&ctx, container, pid] { ctx.exit_code = run_attach(ctx, *container, *pid); });
  auto* release = ledger->add_subcommand("release", "Remove every booking of a container");
  release->add_option("--container", *container, "Container id")->required();
  release->callback([&ctx, container] { ctx.exit_code = run_release(ctx, *container); });
}

}  // namespace gpufrac::cli
