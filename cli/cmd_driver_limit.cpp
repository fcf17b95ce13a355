// `gpufrac driver-limit set|clear`: the driver's per-cgroup memory limits of bookings
// (nvml/driver_limit_apply.hpp). The static front-ends, which never load NVML, run these with a
// clean environment (exec/driver_limit_exec.hpp):
//   gpufrac driver-limit set --container ID --instance I --pid P   (or --claim UID --pid P)
//     after the booking, at createRuntime: plans, records and sets the limits of the instance's
//     bookings on the cgroup of process P; prints one JSON object {"set": [...], "note": "..."}.
//   gpufrac driver-limit clear
//     after a release (poststop, a refused start): clears the ledger's limits_to_clear.
//   gpufrac driver-limit show --cgroup DIR [--json]
//     what the driver holds for a cgroup on each GPU (soft, hard, used), read-only.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"
#include "nvml/driver_limit_apply.hpp"
#include "nvml/driver_limits.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac::cli {

namespace {

struct SetOptions {
  std::string container, instance, claim;
  std::int64_t pid = 0;
  bool json = false;  // accepted: set always prints JSON
};

Result<LimitTarget> target_of(const SetOptions& o) {
  if (o.container.empty() == o.claim.empty()) return user_error("name --container ID or --claim UID (one of them)");
  if (o.pid <= 0 || o.pid > kMaxPid) return user_error(text::cat("--pid ", o.pid, " is not valid; use 1-", kMaxPid));
  if (!o.claim.empty()) {
    if (auto r = validate_kube_uid(o.claim, "claim uid"); !r) return std::unexpected(r.error());
    return LimitTarget{o.claim, "", true, static_cast<pid_t>(o.pid)};
  }
  if (auto r = validate_container_id(o.container); !r) return std::unexpected(r.error());
  if (auto r = validate_optional_instance(o.instance); !r) return std::unexpected(r.error());
  return LimitTarget{o.container, o.instance, false, static_cast<pid_t>(o.pid)};
}

nlohmann::json planned_json(const PlannedLimit& p) {
  return {{"device_key", p.device_key}, {"gpu_index", p.gpu_index}, {"gpu_uuid", p.gpu_uuid},
          {"cgroup", p.limit.cgroup},   {"soft", p.limit.soft},     {"hard", p.limit.hard}};
}

int run_set(Context& ctx, const SetOptions& o) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  log::init(cfg->log, "gpufrac-driver-limit");
  log::set_context(o.claim.empty() ? o.container : o.claim);
  auto target = target_of(o);
  if (!target) return ctx.fail(target.error());
  auto applied = apply_driver_limits(*cfg, *target);
  if (!applied) {
    log::error("driver limit: " + applied.error().message);
    return ctx.fail(applied.error());
  }
  nlohmann::json set = nlohmann::json::array();
  for (const auto& p : applied->set) {
    set.push_back(planned_json(p));
    log::info(text::cat("driver limit on GPU ", p.gpu_index, " for ", p.limit.cgroup, ": soft ",
                        text::format_bytes(p.limit.soft), ", hard ", text::format_bytes(p.limit.hard)));
  }
  if (!applied->note.empty()) log::info("driver limit: " + applied->note);
  std::printf("%s\n", nlohmann::json{{"set", set}, {"note", applied->note}}.dump().c_str());
  return 0;
}

int run_clear(Context& ctx, bool json) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  log::init(cfg->log, "gpufrac-driver-limit");
  auto report = clear_driver_limits(*cfg);
  if (!report) return ctx.fail(report.error());
  for (const auto& r : report->cleared) log::info("driver limit cleared: " + r.owner + " on " + r.limit.cgroup);
  for (const auto& e : report->errors) log::warn("driver limit kept for gc: " + e);
  if (json) {
    nlohmann::json cleared = nlohmann::json::array(), dropped = nlohmann::json::array();
    for (const auto& r : report->cleared) cleared.push_back(limit_to_clear_to_json(r));
    for (const auto& r : report->dropped) dropped.push_back(limit_to_clear_to_json(r));
    std::printf("%s\n",
                nlohmann::json{{"cleared", cleared}, {"dropped", dropped}, {"errors", report->errors}}.dump().c_str());
  } else {
    std::printf("Cleared %zu driver limit(s)%s.\n", report->cleared.size(),
                report->errors.empty() ? "" : text::cat("; ", report->errors.size(), " kept for gc").c_str());
  }
  if (report->errors.empty()) return 0;
  return ctx.fail(internal_error(report->errors.front()).error());
}

Result<std::string> show_text(const Config& cfg, const std::string& cgroup, bool json) {
  if (auto r = validate_cgroup_path(cgroup); !r) return std::unexpected(r.error().wrap("--cgroup"));
  if (!fs::exists(cgroup))
    return user_error("--cgroup " + text::quote(cgroup) + " does not exist; name a cgroup v2 directory");
  // A read changes nothing in the config: say what there is to read, not what to configure.
  if (uses_simulated_machine(cfg))
    return user_error("this node is the simulated machine " + cfg.nvml.machine +
                      " (nvml.machine), which has no driver to hold memory limits: nothing to show; gpufrac status "
                      "shows who holds each share's limit");
  auto inv = inventory_for_reading(cfg, discover);
  if (!inv) return std::unexpected(inv.error());
  auto drv = LimitDriver::open(cfg);
  if (!drv) return std::unexpected(drv.error());
  nlohmann::json out = nlohmann::json::array();
  std::string text;
  for (const auto& g : inv->gpus) {
    if (g.mig_enabled) continue;  // the driver refuses MIG handles; the GPU's shares are its instances
    auto got = drv->get(g.uuid, cgroup);
    if (!got) return std::unexpected(got.error());
    nlohmann::json j{{"gpu_index", g.index}, {"gpu_uuid", g.uuid}, {"limit", nullptr}};
    if (*got) j["limit"] = {{"soft", (*got)->soft}, {"hard", (*got)->hard}, {"used", (*got)->used}};
    text += *got ? text::cat("GPU ", g.index, ": soft ", (*got)->soft, ", hard ", (*got)->hard, ", used ", (*got)->used,
                             " bytes\n")
                 : text::cat("GPU ", g.index, ": no limit\n");
    out.push_back(std::move(j));
  }
  return json ? out.dump() + "\n" : text;
}

int run_show(Context& ctx, const std::string& cgroup, bool json) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  auto text = show_text(*cfg, cgroup, json);
  if (!text) return ctx.fail(text.error());
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}

}  // namespace

void add_driver_limit_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("driver-limit", "The driver's per-cgroup memory limits of bookings (r615+)");
  cmd->require_subcommand(0, 1);  // alone: its help (cli/usage.hpp)
  auto o = std::make_shared<SetOptions>();
  auto* set = cmd->add_subcommand("set", "Set the limits of a container's bookings on its cgroup (prints JSON)");
  set->add_option("--container", o->container, "Container id");
  set->add_option("--instance", o->instance, "Container instance (gpufrac-runtime's, else p<pid>-<start>)");
  set->add_option("--claim", o->claim, "Kubernetes claim uid (instead of --container): the pod's cgroup");
  set->add_option("--pid", o->pid, "Host pid of the container's process")->required();
  set->add_flag("--json", o->json, "Print JSON (what this command always prints)");
  set->callback([&ctx, o] { ctx.exit_code = run_set(ctx, *o); });
  auto json = std::make_shared<bool>(false);
  auto* clear = cmd->add_subcommand("clear", "Clear the limits of released bookings (the ledger's limits_to_clear)");
  clear->add_flag("--json", *json, "Print JSON");
  clear->callback([&ctx, json] { ctx.exit_code = run_clear(ctx, *json); });
  auto cgroup = std::make_shared<std::string>();
  auto* show = cmd->add_subcommand("show", "Show what the driver holds for a cgroup on each GPU (read-only)");
  show->add_option("--cgroup", *cgroup, "The cgroup's directory (under cgroup-root)")->required();
  show->add_flag("--json", *json, "Print JSON");
  show->callback([&ctx, cgroup, json] { ctx.exit_code = run_show(ctx, *cgroup, *json); });
}

}  // namespace gpufrac::cli
