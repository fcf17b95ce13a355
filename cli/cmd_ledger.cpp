// `gpufrac ledger reserve|attach|release`: the ledger operations the hook, the runtime wrapper and
// the CDI hooks perform, runnable from a shell for debugging and tests. Hidden from --help.
//   gpufrac ledger reserve --container ID --annotation gpufrac.io/fraction=0.25 [--pid N] [--json]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/booking_args.hpp"
#include "cli/context.hpp"
#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"

namespace gpufrac::cli {

namespace {

struct ReserveOptions : BookingOptions {
  bool json = false;
};

int run_reserve(Context& ctx, const ReserveOptions& o) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto args = reserve_args_from(o, *cfg, "gpufrac.io/fraction=0.25");
  if (!args) return ctx.fail(args.error());
  auto inv = inventory_for_allocation(*cfg, discover);
  if (!inv) return ctx.fail(inv.error());
  auto booking = Ledger(LedgerOptions::from(*cfg)).reserve(*args, *inv, cfg->allocation);
  if (!booking) return ctx.fail(booking.error());
  if (o.json) {
    auto j = grant_json(booking->grant, booking->existing);
    j["reclaimed"] = booking->reclaimed.size();
    if (booking->grants.size() > 1) {  // a multi-GPU share: every GPU's grant, by index
      j["gpus"] = nlohmann::json::array();
      for (const auto& g : booking->grants) j["gpus"].push_back(grant_json(g, booking->existing));
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  for (const Grant& g : booking->grants)
    std::printf("%s %s on %s for %s: %s\n", booking->existing ? "already booked" : "booked",
                booked_text(g.bytes, g.compute_ppm).c_str(), g.device_uuid.c_str(), o.container.c_str(),
                g.reason.c_str());
  return 0;
}

// The bookings an operation touched, as JSON (the ledger's entry form).
void print_entries(const std::vector<LedgerEntry>& entries) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : entries) a.push_back(entry_to_json(e));
  std::printf("%s\n", a.dump(2).c_str());
}

int run_attach(Context& ctx, const std::string& container, std::int64_t pid, bool json) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto entries = Ledger(LedgerOptions::from(*cfg)).attach(container, pid);
  if (!entries) return ctx.fail(entries.error());
  if (json) {
    print_entries(*entries);
    return 0;
  }
  std::printf("attached pid %lld to %zu booking(s) of %s\n", static_cast<long long>(pid), entries->size(),
              container.c_str());
  return 0;
}

int run_release(Context& ctx, const std::string& container, bool json) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto removed = Ledger(LedgerOptions::from(*cfg)).release(container);
  if (!removed) return ctx.fail(removed.error());
  if (json) {
    print_entries(*removed);
    return 0;
  }
  std::printf("released %zu booking(s) of %s\n", removed->size(), container.c_str());
  return 0;
}

void add_reserve(CLI::App& ledger, Context& ctx) {
  auto o = std::make_shared<ReserveOptions>();
  auto* cmd = ledger.add_subcommand("reserve", "Book a device for a container");
  add_booking_options(*cmd, *o);
  cmd->add_flag("--json", o->json, "Print the grant as JSON");
  cmd->callback([&ctx, o] { ctx.exit_code = run_reserve(ctx, *o); });
}

}  // namespace

void add_ledger_command(CLI::App& app, Context& ctx) {
  auto* ledger = app.add_subcommand("ledger", "Ledger operations for debugging and tests");
  ledger->require_subcommand(0, 1);  // alone: its help (cli/usage.hpp)
  add_reserve(*ledger, ctx);
  auto container = std::make_shared<std::string>();
  auto pid = std::make_shared<std::int64_t>(0);
  auto json = std::make_shared<bool>(false);
  auto* attach = ledger->add_subcommand("attach", "Give a container's pending bookings its pid");
  attach->add_option("--container", *container, "Container id")->required();
  attach->add_option("--pid", *pid, "Host pid")->required();
  attach->add_flag("--json", *json, "Print the container's bookings as JSON");
  attach->callback([&ctx, container, pid, json] { ctx.exit_code = run_attach(ctx, *container, *pid, *json); });
  auto* release = ledger->add_subcommand("release", "Remove every booking of a container");
  release->add_option("--container", *container, "Container id")->required();
  release->add_flag("--json", *json, "Print the released bookings as JSON");
  release->callback([&ctx, container, json] { ctx.exit_code = run_release(ctx, *container, *json); });
  ledger->group("");  // hidden from gpufrac --help; set last, so its own subcommands stay listed
}

}  // namespace gpufrac::cli
