// The allocator on dynamic-MIG GPUs: the planner's reuse plans become grants; any other plan is a
// refusal naming what the provisioner would do, and dynamic_mig_applies() tells the front-ends
// when to run it.
#include <algorithm>

#include "core/allocator/allocator_detail.hpp"
#include "core/mig/mig_plan.hpp"
#include "core/text.hpp"

namespace gpufrac {

bool reaches_mig(const Request& r) {
  return r.kind == SizeKind::mig_profile || (!r.compute_mode && !r.priority);
}

bool DynamicMig::dynamic(const Gpu& gpu) const {
  return config != nullptr && gpu.mig_enabled && config->mode_for(gpu.index, gpu.uuid) == MigMode::dynamic;
}

bool dynamic_mig_applies(const Request& r, const Inventory& inv, const AllocationConfig& allocation,
                         const MigConfig& mig) {
  if (r.kind != SizeKind::mig_profile && (!allocation.mig_serves_fractions || !reaches_mig(r))) return false;
  const DynamicMig dyn{&mig, nullptr};
  for (const Gpu& g : inv.gpus) {
    if (r.gpu && (r.gpu->index ? g.index != *r.gpu->index : g.uuid != r.gpu->uuid)) continue;
    if (dyn.dynamic(g)) return true;
  }
  return false;
}

namespace alloc_detail {

Result<Grant> mig_pinned(const Request& r, const Candidates& gpus, const MigContext& ctx) {
  const Gpu* g = gpus.front();
  const Load& load = ctx.load;
  const DynamicMig& dynamic = ctx.dynamic;
  if (dynamic.dynamic(*g) && load.of(r.gpu->mig_uuid).entries.empty() && dynamic.idle != nullptr &&
      std::none_of(dynamic.idle->begin(), dynamic.idle->end(),
                   [&](const MigIdleRecord& i) { return i.uuid == r.gpu->mig_uuid; }) &&
      std::any_of(g->mig_instances.begin(), g->mig_instances.end(),
                  [&](const MigInstance& m) { return m.uuid == r.gpu->mig_uuid; }))
    return user_error(text::cat("MIG instance ", r.gpu->mig_uuid, " on dynamic MIG GPU ", g->index,
                                " is being created or destroyed; retry, or ask for mig-profile=", r.mig_profile));
  return mig_by_profile(r, gpus, ctx);
}

Result<Grant> mig_dynamic(const Request& r, const Candidates& gpus, const MigContext& ctx) {
  static const std::vector<MigIdleRecord> kNone;
  std::vector<MigGpuView> views;
  for (const Gpu* g : gpus)
    views.push_back(mig_view(*g, ctx.live, ctx.dynamic.idle ? *ctx.dynamic.idle : kNone, {}, {}, ctx.holder));
  auto plan = plan_mig(r, views);
  if (!plan) return std::unexpected(plan.error());
  if (!plan->reuse())
    return user_error(text::cat("no idle MIG instance serves ", text::split(r.describe(), ' ')[0], " on GPU ",
                                plan->gpu_index, "; dynamic MIG provisioning (gpufrac mig provision) would make ",
                                plan->create.gi
                                    ? text::cat(plan->create.device_profile, " in GPU instance ", *plan->create.gi)
                                    : placement_text(plan->create.device_profile, plan->create.placement),
                                plan->destroy.empty() ? "" : " after destroying idle instances"));
  for (const Gpu* g : gpus)
    for (const MigInstance& m : g->mig_instances)
      if (m.uuid == plan->reuse_uuid) return mig_grant(*g, m, plan->bytes, plan->reason);
  return internal_error("the MIG planner chose an instance the inventory lacks: " + plan->reuse_uuid);
}

}  // namespace alloc_detail

}  // namespace gpufrac
