#include "nvml/mig_provision.hpp"

#include <algorithm>
#include <ctime>

#include "core/allocator/allocator.hpp"
#include "core/ledger/ledger_mig.hpp"
#include "core/mig/mig_device.hpp"
#include "core/process.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"
#include "nvml/mig_made.hpp"
#include "nvml/mig_steps.hpp"

namespace gpufrac {

namespace {

std::int64_t now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

bool pinned_out(const Request& r, const Gpu& g) {
  return r.gpu && (r.gpu->index ? g.index != *r.gpu->index : g.uuid != r.gpu->uuid);
}

MigHolder holder_of(const ReserveArgs& a) {
  return MigHolder{a.container_id, a.instance, a.source == BookingSource::dra};
}

// The GPU the planner picks among the dynamic ones the request may use (the made lists read
// without the MIG locks: only the holder of a lock changes one).
Result<std::string> target_gpu(const Config& cfg, const Inventory& inv, const LedgerState& state,
                               const ReserveArgs& a) {
  const DynamicMig dyn{&cfg.mig, &state.mig_idle};
  std::vector<MigGpuView> views;
  for (const Gpu& g : inv.gpus) {
    if (pinned_out(a.request, g) || !dyn.dynamic(g)) continue;
    auto made = read_mig_made(cfg, g.uuid);
    if (!made) return std::unexpected(made.error());
    views.push_back(mig_view(g, state.entries, state.mig_idle, {}, *made, holder_of(a)));
  }
  std::sort(views.begin(), views.end(), [](const auto& a, const auto& b) { return a.gpu->index < b.gpu->index; });
  auto plan = plan_mig(a.request, views);
  if (!plan) return std::unexpected(plan.error());
  return plan->gpu_uuid;
}

// The plan on one GPU, with expired idle instances counted as gone and added to the destroy list.
Result<MigPlan> plan_on_gpu(const Request& r, const MigGpuView& view, const std::vector<std::string>& expired) {
  MigGpuView rest{view.gpu, {}};
  std::vector<MigDestroyStep> gone;
  for (const MigOccupant& o : view.occupants) {
    bool old = o.destroyable() && std::all_of(o.uuids.begin(), o.uuids.end(), [&](const std::string& u) {
                 return std::find(expired.begin(), expired.end(), u) != expired.end();
               });
    if (old)
      gone.push_back(MigDestroyStep{o.gi, o.profile_name, o.placement, o.uuids});
    else
      rest.occupants.push_back(o);
  }
  auto plan = plan_mig(r, {rest});
  if (!plan || plan->reuse()) return plan;
  plan->destroy.insert(plan->destroy.end(), gone.begin(), gone.end());
  std::sort(plan->destroy.begin(), plan->destroy.end(), [](const auto& a, const auto& b) { return a.gi < b.gi; });
  return plan;
}

struct Target {
  const Config& cfg;
  Ledger& ledger;
  const MigDriver& driver;
  nvmlDevice_t device;
  const ReserveArgs& args;
  const InventoryListener& on_changed;
};

// Step 4: the plan, and the idle records of what it destroys dropped under the ledger lock.
Result<MigPlan> claim(Target& t, const Gpu& gpu, const std::vector<MigForeign>& foreign,
                      const std::vector<std::string>& made) {
  std::optional<Result<MigPlan>> plan;
  auto updated = t.ledger.update([&](LedgerState& s) -> Result<bool> {
    bool changed = sync_idle_records(s, gpu, now());
    MigGpuView view = mig_view(gpu, s.entries, s.mig_idle, foreign, made, holder_of(t.args));
    plan = plan_on_gpu(t.args.request, view, expired_idle(s, gpu, t.cfg.mig.idle_timeout_s, now()));
    if (!*plan || (*plan)->reuse()) return changed;
    for (const MigDestroyStep& d : (*plan)->destroy)
      for (const std::string& uuid : d.uuids) changed = drop_idle_record(s, uuid) || changed;
    return changed;
  });
  if (!updated) return std::unexpected(updated.error());
  return std::move(*plan);
}

// The grant of a MIG device: `bytes` of its GPU instance's memory; the GPU instance's memory too.
Result<std::pair<Grant, std::uint64_t>> grant_of_instance(const Inventory& inv, const std::string& gpu_uuid,
                                                          std::uint32_t gi, std::uint32_t ci, const MigPlan& plan) {
  const Gpu* g = inv.gpu_by_uuid(gpu_uuid);
  for (const MigInstance& m : g ? g->mig_instances : std::vector<MigInstance>{})
    if (m.gi_id == gi && m.ci_id == ci)
      return std::pair{
          Grant{m.uuid, g->index, g->uuid, MigRef{gi, ci, mig_device_profile(*g, m)}, plan.bytes, true, plan.reason},
          m.memory_bytes};
  return internal_error(text::cat("MIG instance gi ", gi, " ci ", ci, " of ", gpu_uuid, " is not in the inventory"));
}

Result<ProvisionResult> book(Target& t, const std::pair<Grant, std::uint64_t>& grant, ProvisionResult out) {
  auto booking = t.ledger.reserve_granted(t.args, grant.first, grant.second);
  if (!booking) return std::unexpected(booking.error());
  out.booking = std::move(*booking);
  return out;
}

// Steps 4 to 6 on a GPU whose lock is held and whose inventory was just read from NVML.
Result<ProvisionResult> provision_on(Target& t, const Inventory& inv, const Gpu& gpu, ProvisionResult out) {
  auto foreign = foreign_gpu_instances(t.driver, t.device, gpu);
  if (!foreign) return std::unexpected(foreign.error());
  auto made = prune_mig_made(t.cfg, gpu);
  if (!made) return std::unexpected(made.error());
  auto plan = claim(t, gpu, *foreign, *made);
  if (!plan) return std::unexpected(plan.error());
  if (plan->reuse()) {
    auto m = std::find_if(gpu.mig_instances.begin(), gpu.mig_instances.end(),
                          [&](const MigInstance& i) { return i.uuid == plan->reuse_uuid; });
    if (m == gpu.mig_instances.end()) return internal_error("the MIG planner chose an unknown instance");
    auto grant = grant_of_instance(inv, gpu.uuid, m->gi_id, m->ci_id, *plan);
    if (!grant) return std::unexpected(grant.error());
    return book(t, *grant, std::move(out));
  }
  auto destroyed = destroy_gpu_instances(t.driver, t.device, gpu, plan->destroy);
  Result<nvml::CreatedInstance> created =
      destroyed ? create_journaled(t.driver, t.device, t.cfg, gpu, plan->create, t.args.container_id)
                : std::unexpected(destroyed.error());
  auto fresh = refresh_after_mig_change(t.cfg, t.on_changed, out.notes);
  if (!created) return std::unexpected(created.error());
  if (!fresh) return std::unexpected(fresh.error());
  if (auto r = finish_journaled(t.cfg, *fresh, gpu.uuid, *created); !r) return std::unexpected(r.error());
  if (const Gpu* now_gpu = fresh->gpu_by_uuid(gpu.uuid); now_gpu && !plan->destroy.empty())
    if (auto pruned = prune_mig_made(t.cfg, *now_gpu); !pruned) return std::unexpected(pruned.error());
  out.destroyed = plan->destroy;
  out.created = plan->create;
  auto grant = grant_of_instance(*fresh, gpu.uuid, created->gi, created->ci, *plan);
  if (!grant) return std::unexpected(grant.error());
  if (const Gpu* g = fresh->gpu_by_uuid(gpu.uuid))
    for (const MigInstance& m : g->mig_instances)
      if (m.uuid == grant->first.device_uuid) ensure_cap_nodes(t.cfg, m, out.notes);
  return book(t, *grant, std::move(out));
}

// Steps 2 and 3: lock, NVML, recovery, records, and the reservation that may now reuse.
Result<ProvisionResult> provision_locked(const Config& cfg, Ledger& ledger, const std::string& gpu_uuid,
                                         const ReserveArgs& args, const InventoryListener& on_changed) {
  auto lock = MigGpuLock::acquire(cfg, gpu_uuid);
  if (!lock) return std::unexpected(lock.error());
  auto driver = MigDriver::open(cfg);
  if (!driver) return std::unexpected(driver.error());
  auto device = nvml::mig_device(driver->lib(), gpu_uuid);
  if (!device) return std::unexpected(device.error());
  auto cached = inventory_for_allocation(cfg, discover);
  if (!cached) return std::unexpected(cached.error());
  ProvisionResult out;
  if (const Gpu* g = cached->gpu_by_uuid(gpu_uuid)) {
    auto note = recover_mig_journal(*driver, *device, cfg, *g);
    if (!note) return std::unexpected(note.error());
    if (!note->empty()) out.notes.push_back(*note);
  }
  auto inv = out.notes.empty() ? rediscover_mig(cfg) : refresh_after_mig_change(cfg, on_changed, out.notes);
  if (!inv) return std::unexpected(inv.error());
  const Gpu* gpu = inv->gpu_by_uuid(gpu_uuid);
  if (gpu == nullptr || !gpu->mig_enabled) return internal_error("GPU " + gpu_uuid + " is no longer in MIG mode");
  auto synced = ledger.update([&](LedgerState& s) -> Result<bool> { return sync_idle_records(s, *gpu, now()); });
  if (!synced) return std::unexpected(synced.error());
  if (auto b = ledger.reserve(args, *inv, cfg.allocation)) {
    out.booking = std::move(*b);
    return out;
  }
  Target t{cfg, ledger, *driver, *device, args, on_changed};
  return provision_on(t, *inv, *gpu, std::move(out));
}

// A refusal the provisioner cannot cure (bad ids, a process that is gone, another booking of the
// same container and key) must not make it create anything.
bool curable(const Config& cfg, const ReserveArgs& a, const LedgerState& state) {
  if (!validate_container_id(a.container_id) || !validate_device_key(a.device_key)) return false;
  if (a.pid < 0 || a.pid > kMaxPid || (a.pid != 0 && !read_proc_stat(cfg.proc_root, a.pid))) return false;
  return std::none_of(state.entries.begin(), state.entries.end(), [&](const LedgerEntry& e) {
    return e.container_id == a.container_id && e.device_key == a.device_key;
  });
}

}  // namespace

Result<ProvisionResult> provision_mig(const Config& cfg, const ReserveArgs& args, const InventoryListener& on_changed) {
  Ledger ledger(LedgerOptions::from(cfg));
  auto inv = inventory_for_allocation(cfg, discover);
  if (!inv) return std::unexpected(inv.error());
  auto first = ledger.reserve(args, *inv, cfg.allocation);
  if (first) return ProvisionResult{std::move(*first), {}, std::nullopt, {}};
  if (first.error().kind != ErrorKind::user || !dynamic_mig_applies(args.request, *inv, cfg.allocation, cfg.mig))
    return std::unexpected(first.error());
  auto state = ledger.read();
  if (!state) return std::unexpected(state.error());
  if (!curable(cfg, args, *state)) return std::unexpected(first.error());
  auto gpu = target_gpu(cfg, *inv, *state, args);
  if (!gpu) return std::unexpected(gpu.error());
  return provision_locked(cfg, ledger, *gpu, args, on_changed);
}

}  // namespace gpufrac
