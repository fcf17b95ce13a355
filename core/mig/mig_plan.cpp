// The dynamic MIG planner (rules in mig_plan.hpp): per candidate shape, reuse -> add a compute
// instance to a GPU instance -> create a GPU instance (destroying idle ones when needed) -> next
// shape. Views: mig_view.cpp; GPU instance placements: mig_place.cpp; compute instance placements:
// mig_ci_place.cpp.
#include "core/mig/mig_plan.hpp"

#include <algorithm>
#include <tuple>

#include "core/mig/mig_place.hpp"
#include "core/text.hpp"

namespace gpufrac {

using mig_detail::PlacementChoice;

namespace {

std::string size_text(const Request& r) {
  std::string out = text::split(r.describe(), ' ')[0];
  if (r.gpu && r.gpu->mig_start) out += text::cat(" at memory slice ", *r.gpu->mig_start);
  return out;
}

std::optional<std::uint32_t> pinned_start(const Request& r) {
  return r.gpu ? r.gpu->mig_start : std::nullopt;
}

// A GPU instance of the shape's profile the request may use (not blocked, not held, the pin).
bool usable_gi(const MigOccupant& o, const MigCandidate& c, std::optional<std::uint32_t> start) {
  return o.profile_id == c.shape.gi->id && o.state != OccupantState::blocked && !o.held &&
         (!start || o.placement.start == *start) && o.booked() + c.bytes <= gi_memory_bytes(*c.shape.gi);
}

// The order among GPU instances that already serve someone: busy ones first (idle ones stay free
// to be destroyed), then GPU, GI.
using GiRank = std::tuple<bool, std::uint32_t, std::uint32_t>;
GiRank rank(const MigGpuView& v, const MigOccupant& o) {
  return {o.state != OccupantState::busy, v.gpu->index, o.gi};
}

MigPlan base_plan(const MigGpuView& v, const MigCandidate& c) {
  MigPlan plan{v.gpu->index, v.gpu->uuid};
  plan.bytes = c.bytes;
  return plan;
}

std::optional<MigPlan> reuse_plan(const std::vector<MigGpuView>& views, const std::vector<const MigCandidate*>& cands,
                                  std::optional<std::uint32_t> start) {
  std::optional<std::tuple<GiRank, std::uint32_t, MigPlan>> best;
  for (std::size_t g = 0; g < views.size(); ++g) {
    if (cands[g] == nullptr) continue;
    const MigCandidate& c = *cands[g];
    for (const MigOccupant& o : views[g].occupants) {
      if (!usable_gi(o, c, start)) continue;
      for (const MigCiOccupant& ci : o.cis) {
        if (ci.state != OccupantState::idle || !ci.caps || ci.slices != c.shape.ci.slices) continue;
        if (best && std::tie(std::get<0>(*best), std::get<1>(*best)) <= std::tuple(rank(views[g], o), ci.ci)) continue;
        MigPlan plan = base_plan(views[g], c);
        plan.reuse_uuid = ci.uuid;
        plan.reason = text::cat("dynamic MIG: idle ", c.shape.name(), " on GPU ", views[g].gpu->index, " gi ", o.gi,
                                c.shape.full() ? "" : text::cat(" ci ", ci.ci), " reused");
        best.emplace(rank(views[g], o), ci.ci, std::move(plan));
      }
    }
  }
  if (!best) return std::nullopt;
  return std::move(std::get<2>(*best));
}

// A compute instance smaller than its GPU instance, added to one that has room.
std::optional<MigPlan> add_plan(const std::vector<MigGpuView>& views, const std::vector<const MigCandidate*>& cands,
                                std::optional<std::uint32_t> start) {
  std::optional<std::pair<GiRank, MigPlan>> best;
  for (std::size_t g = 0; g < views.size(); ++g) {
    const MigCandidate* c = cands[g];
    if (c == nullptr || c->shape.full() || !c->shape.known()) continue;
    for (const MigOccupant& o : views[g].occupants) {
      if (!usable_gi(o, *c, start) || (best && best->first <= rank(views[g], o))) continue;
      auto at = mig_detail::best_ci_start(*c->shape.gi, c->shape.ci, o.cis);
      if (!at) continue;
      MigPlan plan = base_plan(views[g], *c);
      plan.create = MigCreateStep{o.profile_id,       o.profile_name, o.placement, o.gi,
                                  c->shape.ci.slices, c->shape.ci.id, *at,         c->shape.name()};
      plan.reason =
          text::cat("dynamic MIG: new ", c->shape.name(), " at compute slice ", *at, " of GPU ", views[g].gpu->index,
                    " gi ", o.gi, " (", placement_text(o.profile_name, o.placement), ")");
      best.emplace(rank(views[g], o), std::move(plan));
    }
  }
  if (!best) return std::nullopt;
  return std::move(best->second);
}

MigPlan create_plan(const MigGpuView& v, const MigCandidate& c, const PlacementChoice& choice) {
  MigPlan plan = base_plan(v, c);
  std::vector<std::string> gone;
  for (std::size_t i : choice.destroyed) {
    const MigOccupant& o = v.occupants[i];
    plan.destroy.push_back(MigDestroyStep{o.gi, o.profile_name, o.placement, o.uuids});
    gone.push_back(placement_text(o.profile_name, o.placement));
  }
  const MigProfile& p = *c.shape.gi;
  plan.create = MigCreateStep{p.id, p.name, {choice.start, p.memory_slices}, std::nullopt, c.shape.ci.slices};
  plan.create.device_profile = c.shape.name();
  if (c.shape.known()) {
    plan.create.ci_profile_id = c.shape.ci.id;
    plan.create.ci_start = mig_detail::best_ci_start(p, c.shape.ci, {});
  }
  plan.reason = text::cat("dynamic MIG: new ", c.shape.full() ? "" : c.shape.name() + " in a new ",
                          placement_text(p.name, plan.create.placement), " on GPU ", v.gpu->index,
                          gone.empty() ? "" : " after destroying idle " + text::join(gone, ", "), " (", choice.score,
                          " usable memory slices left)");
  return plan;
}

std::string who(const MigOccupant& o, const MigCiOccupant& c) {
  if (c.state == OccupantState::busy) return " (" + c.holder + ")";
  return o.held ? " (idle, beside yours)" : " (idle)";
}

// Why nothing fits: the GPUs' profiles or the instances in the way.
std::string refusal(const Request& r, const std::vector<MigGpuView>& views, bool any_candidate) {
  std::vector<std::string> parts;
  bool held = false;
  for (const MigGpuView& v : views) {
    std::vector<std::string> items;
    for (const MigOccupant& o : v.occupants) {
      held = held || o.held;
      if (o.state == OccupantState::blocked)
        items.push_back(placement_text(o.profile_name, o.placement) + " (no compute instance)");
      else if (!o.split())
        items.push_back(placement_text(o.profile_name, o.placement) +
                        (o.state == OccupantState::busy ? " (" + o.holder + ")" : who(o, o.cis.front())));
      else
        for (const MigCiOccupant& c : o.cis)
          items.push_back(placement_text(text::cat(c.slices, "c.", o.profile_name), o.placement) + who(o, c));
    }
    parts.push_back(text::cat("GPU ", v.gpu->index, ": ", items.empty() ? "no instances" : text::join(items, ", ")));
  }
  if (!any_candidate && r.kind == SizeKind::mig_profile)
    return text::cat("no dynamic MIG GPU offers profile ", r.mig_profile, r.memory_bytes ? " with that memory" : "",
                     "; gpufrac info lists each GPU's profiles");
  if (!any_candidate) return text::cat("no MIG profile of a dynamic MIG GPU holds ", size_text(r));
  return text::cat("no MIG instance for ", size_text(r),
                   " fits on a dynamic MIG GPU, even after destroying idle ones: ", text::join(parts, "; "),
                   held ? "; a container gets one compute instance per GPU instance" : "");
}

}  // namespace

std::vector<const MigProfile*> mig_candidate_profiles(const Request& r, const Gpu& gpu) {
  std::vector<const MigProfile*> out;
  for (const MigCandidate& c : mig_candidates(r, gpu))
    if (std::find(out.begin(), out.end(), c.shape.gi) == out.end()) out.push_back(c.shape.gi);
  return out;
}

Result<MigPlan> plan_mig(const Request& r, const std::vector<MigGpuView>& views) {
  std::vector<std::vector<MigCandidate>> candidates;
  std::size_t ranks = 0;
  for (const MigGpuView& v : views) {
    candidates.push_back(mig_candidates(r, *v.gpu));
    ranks = std::max(ranks, candidates.back().size());
  }
  for (std::size_t k = 0; k < ranks; ++k) {
    std::vector<const MigCandidate*> at(views.size(), nullptr);
    for (std::size_t g = 0; g < views.size(); ++g)
      if (k < candidates[g].size()) at[g] = &candidates[g][k];
    if (auto plan = reuse_plan(views, at, pinned_start(r))) return std::move(*plan);
    if (auto plan = add_plan(views, at, pinned_start(r))) return std::move(*plan);
    std::optional<PlacementChoice> best;
    std::size_t best_gpu = 0;
    for (std::size_t g = 0; g < views.size(); ++g) {
      // Only a request that names a compute instance splits a new GPU instance for it.
      if (at[g] == nullptr || (!at[g]->shape.full() && r.kind != SizeKind::mig_profile)) continue;
      auto c = mig_detail::best_placement(views[g], *at[g]->shape.gi, pinned_start(r));
      if (c && (!best || mig_detail::better(*c, *best))) {
        best = std::move(c);
        best_gpu = g;
      }
    }
    if (best) return create_plan(views[best_gpu], *at[best_gpu], *best);
  }
  return user_error(refusal(r, views, ranks > 0));
}

}  // namespace gpufrac
