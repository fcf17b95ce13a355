// `gpufrac mig provision|plan`: dynamic MIG by hand and for the static front-ends.
//   gpufrac mig provision --container ID [--device-key K] [--pid P] [--source hook|wrapper|cdi]
//                         --annotation KEY=VALUE...
//     books the request, creating (and destroying idle) MIG instances on a dynamic-MIG GPU as the
//     planner says (nvml/mig_provision.hpp), and prints the grant as one JSON object. gpufrac-hook
//     runs it when its own reservation finds no idle instance (it cannot load NVML).
//   gpufrac mig plan --annotation KEY=VALUE... [--json]
//     what a request would get now on the dynamic GPUs, changing nothing.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cdi/spec_write.hpp"
#include "cli/booking_args.hpp"
#include "cli/context.hpp"
#include "core/allocator/allocator.hpp"
#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/log.hpp"
#include "core/mig/mig_plan.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"
#include "nvml/mig_made.hpp"
#include "nvml/mig_provision.hpp"

namespace gpufrac::cli {

namespace {

struct MigOptions : BookingOptions {
  bool json = false;
};

constexpr const char* kExample = "gpufrac.io/mig-profile=1g.10gb";

nlohmann::json step_json(const MigDestroyStep& d) {
  return {{"gi", d.gi}, {"profile", d.profile_name}, {"start", d.placement.start}, {"uuids", d.uuids}};
}

// A new compute instance: in a new GPU instance (gi null) or an existing one.
nlohmann::json create_json(const MigCreateStep& c) {
  auto opt = [](const std::optional<std::uint32_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"profile", c.profile_name},
          {"profile_id", c.profile_id},
          {"start", c.placement.start},
          {"gi", opt(c.gi)},
          {"device_profile", c.device_profile},
          {"ci_slices", c.ci_slices},
          {"ci_profile_id", opt(c.ci_profile_id)},
          {"ci_start", opt(c.ci_start)}};
}

nlohmann::json provision_json(const ProvisionResult& r) {
  const Grant& g = r.booking.grant;
  nlohmann::json destroyed = nlohmann::json::array();
  for (const auto& d : r.destroyed) destroyed.push_back(step_json(d));
  nlohmann::json created = nullptr;
  if (r.created) created = create_json(*r.created);
  auto j = grant_json(g, r.booking.existing);
  j["destroyed"] = destroyed;
  j["created"] = created;
  j["notes"] = r.notes;
  return j;
}

int run_provision(Context& ctx, const MigOptions& o) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  log::init(cfg->log, "gpufrac-mig");
  log::set_context(o.container);
  auto args = reserve_args_from(o, *cfg, kExample);
  if (!args) return ctx.fail(args.error());
  auto result = provision_mig(*cfg, *args, cdi::spec_refresher(*cfg));
  if (!result) {
    log::error("mig provision: " + result.error().message);
    return ctx.fail(result.error());
  }
  log::info(text::cat("booked ", result->booking.grant.device_uuid, " for ", args->request.describe(), ": ",
                      result->booking.grant.reason));
  std::printf("%s\n", provision_json(*result).dump().c_str());
  return 0;
}

nlohmann::json plan_json(const MigPlan& p) {
  nlohmann::json destroy = nlohmann::json::array();
  for (const auto& d : p.destroy) destroy.push_back(step_json(d));
  nlohmann::json j{{"gpu_index", p.gpu_index}, {"gpu_uuid", p.gpu_uuid}, {"reason", p.reason}, {"bytes", p.bytes}};
  if (p.reuse()) {
    j["reuse"] = p.reuse_uuid;
  } else {
    j["destroy"] = destroy;
    j["create"] = create_json(p.create);
  }
  return j;
}

// A share reaches MIG only with allocation.mig-serves-fractions, without compute-mode or priority,
// and only when no GPU outside MIG mode takes it: else a container gets that share, and a MIG plan
// would answer a question no container asks. The refusal says what it gets instead.
Result<> check_reaches_mig(const Request& r, const Inventory& inv, const LedgerState& state, const Config& cfg) {
  if (r.kind == SizeKind::mig_profile) return {};
  const std::string request = r.describe();
  if (!cfg.allocation.mig_serves_fractions)
    return user_error(request +
                      " is a share, which a container gets on a GPU outside MIG mode, never as a MIG instance: "
                      "allocation.mig-serves-fractions is false; ask with gpufrac.io/mig-profile, or set it to true");
  if (!reaches_mig(r))
    return user_error(request +
                      ": compute-mode and priority keep a request off MIG (only the time-slicing arbiter "
                      "honours them); a container gets a share of a GPU outside MIG mode");
  AllocationConfig shares_only = cfg.allocation;
  shares_only.mig_serves_fractions = false;
  if (auto g = allocate(r, inv, state.entries, shares_only))
    return user_error(request + " fits a GPU outside MIG mode now (" + g->reason +
                      "): a container gets that share; MIG serves a share only when no such GPU can take it");
  return {};
}

int run_plan(Context& ctx, const MigOptions& o) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto request = request_from(o.annotations, cfg->aliases, kExample);
  if (!request) return ctx.fail(request.error());
  auto inv = inventory_for_reading(*cfg, discover);  // a plan changes nothing, not even the cache
  if (!inv) return ctx.fail(inv.error());
  auto state = Ledger(LedgerOptions::from(*cfg)).read();
  if (!state) return ctx.fail(state.error());
  if (auto r = check_reaches_mig(*request, *inv, *state, *cfg); !r) return ctx.fail(r.error());
  const DynamicMig dyn{&cfg->mig, &state->mig_idle};
  std::vector<MigGpuView> views;
  for (const Gpu& g : inv->gpus) {
    if (request->gpu && (request->gpu->index ? g.index != *request->gpu->index : g.uuid != request->gpu->uuid))
      continue;
    if (!dyn.dynamic(g)) continue;
    auto made = read_mig_made(*cfg, g.uuid);
    if (!made) return ctx.fail(made.error());
    views.push_back(mig_view(g, state->entries, state->mig_idle, {}, *made, MigHolder{o.container, o.instance}));
  }
  if (views.empty())
    return ctx.fail(user_error("no GPU the request may use is in dynamic MIG mode; set mig: {mode: dynamic} in the "
                               "config (or mig: {gpus: {\"<index>\": dynamic}} for one GPU in MIG mode)")
                        .error());
  auto plan = plan_mig(*request, views);
  if (!plan) return ctx.fail(plan.error());
  std::printf("%s\n", o.json ? plan_json(*plan).dump(2).c_str() : plan->reason.c_str());
  return 0;
}

}  // namespace

void add_mig_command(CLI::App& app, Context& ctx) {
  auto* mig = app.add_subcommand("mig", "Dynamic MIG: create instances on demand (mig.mode dynamic)");
  mig->require_subcommand(0, 1);  // alone: its help (cli/usage.hpp)
  auto o = std::make_shared<MigOptions>();
  auto* provision = mig->add_subcommand("provision", "Book a request, creating a MIG instance if needed (prints JSON)");
  add_booking_options(*provision, *o);
  provision->add_flag("--json", o->json, "Print JSON (what this command always prints)");
  provision->callback([&ctx, o] { ctx.exit_code = run_provision(ctx, *o); });
  auto* plan = mig->add_subcommand("plan", "Show what a request would get on the dynamic MIG GPUs now");
  plan->add_option("--annotation", o->annotations, "Request annotation KEY=VALUE (repeatable)")->required();
  plan->add_option("--container", o->container,
                   "The container that asks (skips GPU instances it holds a compute instance of)");
  plan->add_flag("--json", o->json, "Print JSON");
  plan->callback([&ctx, o] { ctx.exit_code = run_plan(ctx, *o); });
}

}  // namespace gpufrac::cli
