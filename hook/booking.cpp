#include "hook/booking.hpp"
#include "exec/inventory_exec.hpp"

#include "bundle/nvidia_edits.hpp"
#include "cdi/device_names.hpp"
#include "core/allocator/allocator.hpp"
#include "core/ledger/ledger.hpp"
#include "core/log.hpp"
#include "core/plan/plan.hpp"
#include "core/process.hpp"
#include "core/request/compute_share.hpp"
#include "core/request/env_request.hpp"
#include "core/request/request.hpp"
#include "core/text.hpp"
#include "exec/mig_exec.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac::hook {

namespace {

// The request: the annotations', or the CDI device's named by --cdi-device (booked with the name
// as its device key). Loads inv.inventory, once, whenever there is a request.
Result<std::optional<Request>> request_of(Invocation& inv) {
  std::optional<Request> request;
  if (inv.args.cdi_device.empty()) {
    auto parsed = parse_container_request(inv.spec.annotations, inv.spec.env, inv.cfg.aliases);
    if (!parsed || !*parsed) return parsed;
    request = std::move(**parsed);
  }
  auto inventory = inventory_for_allocation(inv.cfg, refresh_by_cli);
  if (!inventory) return std::unexpected(inventory.error());
  inv.inventory = std::move(*inventory);
  if (request) return request;
  auto named = cdi::request_for_cdi_device(inv.args.cdi_device, inv.inventory);
  if (!named) return std::unexpected(named.error());
  return std::optional<Request>(std::move(*named));
}

// Dynamic MIG: a refused annotation request that a new MIG instance could serve goes to the
// provisioner (`gpufrac mig provision`, which loads NVML and books; this binary never does).
Result<> provision(Invocation& inv) {
  auto keys = request_keys(inv.spec.annotations, inv.spec.env, inv.cfg.aliases);
  if (!keys) return std::unexpected(keys.error());
  ProvisionCall call{
      inv.state.id, "", *inv.state.pid, BookingSource::hook, request_annotations(keys->keys, inv.cfg.aliases),
      inv.instance};
  auto inventory = provision_and_reread(inv.cfg, call);
  if (!inventory) return std::unexpected(inventory.error());
  inv.inventory = std::move(*inventory);
  return {};
}

// The gpufrac CDI devices the spec's hooks name (--cdi-device NAME, one hook per device).
std::vector<std::string> spec_cdi_devices(const Invocation& inv) {
  std::vector<std::string> names;
  for (const auto& h : inv.spec.hooks)
    for (std::size_t i = 0; i + 1 < h.args.size(); ++i)
      if (h.args[i] == "--cdi-device") names.push_back(h.args[i + 1]);
  return names;
}

// The nodes of every gpufrac CDI device in the spec: each name pins its GPU or MIG instance, so
// the grant on an idle node (as `cdi generate` computes it) has the same nodes as the booking.
Result<std::vector<EditDeviceNode>> cdi_granted_nodes(const Invocation& inv) {
  std::vector<Grant> grants;
  for (const auto& name : spec_cdi_devices(inv)) {
    auto members = cdi::cdi_device_members(name, inv.inventory);
    if (!members) return std::unexpected(members.error());
    for (const auto& m : *members) {
      auto request = cdi::request_for_cdi_device(m, inv.inventory);
      if (!request) return std::unexpected(request.error());
      auto grant = allocate(*request, inv.inventory, {}, inv.cfg.allocation);
      if (!grant) return std::unexpected(grant.error());
      grants.push_back(std::move(*grant));
    }
  }
  return plan_device_nodes(grants, inv.inventory, inv.cfg);
}

}  // namespace

std::vector<Grant> grants_of(const std::vector<LedgerEntry>& bookings) {
  std::vector<Grant> out;
  for (const auto& b : bookings) out.push_back(grant_of(b));
  return out;
}

Result<Edits> gpufrac_dir_edits(const Config& cfg, const std::string& container_id, const std::string& instance) {
  auto bookings = Ledger(LedgerOptions::from(cfg)).bookings_of(container_id, instance);
  if (!bookings) return std::unexpected(bookings.error());
  Edits e;
  e.mounts = plan_gpufrac_dir(cfg, container_files(cfg, container_key(container_id, instance)), grants_of(*bookings));
  return e;
}

Result<> identify(Invocation& inv) {
  if (!inv.state.pid) return {};  // book_and_apply refuses a state without a pid
  auto stat = read_proc_stat(inv.cfg.proc_root, *inv.state.pid);
  if (!stat)
    return user_error(
        text::cat("the container's process ", *inv.state.pid, " does not exist (", stat.error().message, ")"));
  inv.pid_start = stat->start_time;
  inv.instance = inv.args.instance.empty() ? process_instance(*inv.state.pid, inv.pid_start) : inv.args.instance;
  return {};
}

Result<std::vector<LedgerEntry>> book(Invocation& inv) {
  auto request = request_of(inv);
  if (!request) return std::unexpected(request.error());
  if (!*request) return std::vector<LedgerEntry>{};
  Ledger ledger(LedgerOptions::from(inv.cfg));
  ReserveArgs args{inv.state.id,   inv.args.cdi_device,
                   **request,      inv.args.cdi_device.empty() ? BookingSource::hook : BookingSource::cdi,
                   *inv.state.pid, inv.pid_start,
                   inv.instance};
  auto booking = ledger.reserve(args, inv.inventory, inv.cfg.allocation);
  // A multi-GPU share never takes a MIG instance: no provisioner for it.
  if (!booking && inv.args.cdi_device.empty() && !(*request)->multi_gpu() &&
      provisioning_may_help(booking.error(), **request, inv.inventory, inv.cfg)) {
    if (auto r = provision(inv); !r) return std::unexpected(r.error());
  } else if (!booking) {
    return std::unexpected(booking.error());
  } else {
    for (const auto& r : booking->reclaimed) log::info("reclaimed " + r.entry.container_id + ": " + r.why);
    for (const auto& g : booking->grants)
      log::info(text::cat("booked ", g.device_uuid, " (", booked_text(g.bytes, g.compute_ppm), ") for ",
                          (*request)->describe(), ": ", g.reason));
  }
  return ledger.bookings_of(inv.state.id, inv.instance);
}

Result<> attach_pid(const Invocation& inv) {
  Ledger ledger(LedgerOptions::from(inv.cfg));
  auto bookings = ledger.attach(inv.state.id, *inv.state.pid, inv.pid_start, inv.args.instance);
  if (!bookings) return std::unexpected(bookings.error());
  log::info(text::cat("attached pid ", *inv.state.pid, " to ", bookings->size(), " booking(s)"));
  return {};
}

Result<Edits> edits_for(Invocation& inv, const std::vector<LedgerEntry>& bookings) {
  if (inv.args.cdi_device.empty()) {
    inv.with_driver = bundle::injects_driver(inv.cfg, inv.inventory, bundle::find_nvidia_edits(inv.spec));
    auto e = plan_container_edits(grants_of(bookings), inv.inventory, inv.cfg, inv.key(), inv.with_driver);
    if (!e) return e;
    if (auto r = bundle::check_spec_gpu_nodes(inv.spec, e->device_nodes); !r) return std::unexpected(r.error());
    return e;
  }
  auto granted = cdi_granted_nodes(inv);
  if (!granted) return std::unexpected(granted.error());
  if (auto r = bundle::check_spec_gpu_nodes(inv.spec, *granted); !r) return std::unexpected(r.error());
  Edits e;  // the spec carries the rest
  e.mounts = plan_gpufrac_dir(inv.cfg, container_files(inv.cfg, inv.key()), grants_of(bookings));
  return e;
}

}  // namespace gpufrac::hook
