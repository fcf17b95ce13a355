// `gpufrac mps provision`: SM sharing (docs/architecture.md "SM sharing") for the static front-ends.
//   gpufrac mps provision --container ID [--device-key K] [--pid P] [--source hook|wrapper|cdi]
//                         [--instance I] --annotation KEY=VALUE...
//     stops MPS daemons idle past compute.mps-idle-timeout, books the request and, for an SM share
//     (gpufrac.io/compute-mode: sm), makes sure the MPS daemon of its GPU runs
//     (nvml/mps_provision.hpp); prints the grant as one JSON object with "notes". gpufrac-hook and
//     gpufrac-runtime run it for every SM share (they cannot load NVML), and for a time share that
//     a GPU in MPS mode idle past its timeout keeps out.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/booking_args.hpp"
#include "cli/context.hpp"
#include "core/log.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"
#include "nvml/inventory_cache.hpp"
#include "nvml/mps_provision.hpp"

namespace gpufrac::cli {

namespace {

constexpr const char* kExample = "gpufrac.io/compute=30 and gpufrac.io/compute-mode=sm";

int run_provision(Context& ctx, const BookingOptions& o) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  log::init(cfg->log, "gpufrac-mps");
  log::set_context(o.container);
  auto args = reserve_args_from(o, *cfg, kExample);
  if (!args) return ctx.fail(args.error());
  auto inv = inventory_for_allocation(*cfg);
  if (!inv) return ctx.fail(inv.error());
  auto result = provision_mps(*cfg, *args, *inv);
  if (!result) {
    log::error("mps provision: " + result.error().message);
    return ctx.fail(result.error());
  }
  for (const auto& n : result->notes) log::info("mps: " + n);
  for (const auto& g : result->booking.grants)
    log::info(text::cat("booked ", g.device_uuid, " (", booked_text(g.bytes, g.compute_ppm), ") for ",
                        args->request.describe(), ": ", g.reason));
  auto j = grant_json(result->booking.grant, result->booking.existing);
  j["notes"] = result->notes;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

void add_mps_command(CLI::App& app, Context& ctx) {
  auto* mps = app.add_subcommand("mps", "SM sharing: the MPS daemons gpufrac runs per GPU (compute-mode sm)");
  mps->require_subcommand(0, 1);  // alone: its help (cli/usage.hpp)
  auto o = std::make_shared<BookingOptions>();
  auto* provision =
      mps->add_subcommand("provision", "Book a request, starting its GPU's MPS daemon for an SM share (prints JSON)");
  add_booking_options(*provision, *o);
  auto json = std::make_shared<bool>(false);
  provision->add_flag("--json", *json, "Print JSON (what this command always prints)");
  provision->callback([&ctx, o] { ctx.exit_code = run_provision(ctx, *o); });
}

}  // namespace gpufrac::cli
