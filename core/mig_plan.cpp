// The dynamic MIG planner (rules in mig_plan.hpp): views of the GPUs, candidate profiles, and the
// order reuse -> create -> destroy and create -> next profile. Placement search: mig_place.cpp.
#include "core/mig_plan.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/ledger_mig.hpp"
#include "core/mig_place.hpp"
#include "core/mig_profile_name.hpp"
#include "core/text.hpp"

namespace gpufrac {

using mig_detail::PlacementChoice;

namespace {

bool attributed(const MigProfile& p) {
  return p.name.find_first_of("+-") != std::string::npos;
}

std::string size_text(const Request& r) {
  std::string out = text::split(r.describe(), ' ')[0];
  if (r.gpu && r.gpu->mig_start) out += text::cat(" at memory slice ", *r.gpu->mig_start);
  return out;
}

// State of one GPU instance from the bookings and records of its MIG devices.
void classify(MigOccupant& o, const std::vector<const MigInstance*>& cis, const std::vector<LedgerEntry>& live,
              const std::vector<MigIdleRecord>& idle) {
  bool recorded = true, caps = true;
  for (const MigInstance* m : cis) {
    o.uuids.push_back(m->uuid);
    caps = caps && !m->cap_nodes.empty();
    auto booked =
        std::find_if(live.begin(), live.end(), [&](const LedgerEntry& e) { return e.device_uuid == m->uuid; });
    if (booked != live.end() && o.holder.empty()) o.holder = booked->container_id;
    auto rec = std::find_if(idle.begin(), idle.end(), [&](const MigIdleRecord& r) { return r.uuid == m->uuid; });
    if (rec == idle.end())
      recorded = false;
    else
      o.idle_since = std::max(o.idle_since, rec->since);
  }
  o.state = !o.holder.empty() ? OccupantState::busy : recorded ? OccupantState::idle : OccupantState::unrecorded;
  o.reusable = o.state == OccupantState::idle && cis.size() == 1 && caps;
}

}  // namespace

MigGpuView mig_view(const Gpu& gpu, const std::vector<LedgerEntry>& live, const std::vector<MigIdleRecord>& idle,
                    const std::vector<MigForeign>& foreign) {
  std::map<std::uint32_t, std::vector<const MigInstance*>> by_gi;
  for (const auto& m : gpu.mig_instances) by_gi[m.gi_id].push_back(&m);
  MigGpuView view{&gpu, {}};
  for (auto& [gi, cis] : by_gi) {
    std::sort(cis.begin(), cis.end(), [](const MigInstance* a, const MigInstance* b) { return a->ci_id < b->ci_id; });
    const MigProfile* p = gpu.profile_by_id(cis.front()->profile_id);
    MigOccupant o{gi, cis.front()->profile_id, cis.front()->profile_name, cis.front()->placement,
                  p ? p->compute_slices : cis.front()->compute_slices};
    classify(o, cis, live, idle);
    view.occupants.push_back(std::move(o));
  }
  for (const MigForeign& f : foreign) {
    if (by_gi.contains(f.gi)) continue;
    const MigProfile* p = gpu.profile_by_id(f.profile_id);
    MigOccupant o{f.gi, f.profile_id, p ? p->name : text::cat("profile ", f.profile_id), f.placement,
                  p ? p->compute_slices : 0};
    o.state = OccupantState::blocked;
    view.occupants.push_back(std::move(o));
  }
  std::sort(view.occupants.begin(), view.occupants.end(),
            [](const MigOccupant& a, const MigOccupant& b) { return a.gi < b.gi; });
  return view;
}

std::vector<const MigProfile*> mig_candidate_profiles(const Request& r, const Gpu& gpu) {
  using Key = std::tuple<bool, std::uint64_t, std::uint64_t, std::uint32_t, std::uint32_t>;
  std::vector<std::pair<Key, const MigProfile*>> fits;
  const std::uint64_t slices = gpu.memory_slices();
  const std::uint64_t need = (static_cast<std::uint64_t>(r.fraction) * slices + kWholeGpuPpm - 1) / kWholeGpuPpm;
  for (const MigProfile& p : gpu.mig_profiles) {
    if (r.kind == SizeKind::mig_profile) {
      if (canonical_mig_profile_or_same(p.name) == r.mig_profile) fits.push_back({Key{}, &p});
    } else if (r.kind == SizeKind::fraction) {
      if (slices > 0 && p.memory_slices >= need)
        fits.push_back({Key{attributed(p), p.memory_slices, p.memory_mib, p.compute_slices, p.index}, &p});
    } else if (p.memory_mib * kMiB >= r.memory_bytes) {
      fits.push_back({Key{attributed(p), p.memory_mib, p.memory_slices, p.compute_slices, p.index}, &p});
    }
  }
  std::stable_sort(fits.begin(), fits.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const MigProfile*> out;
  for (const auto& f : fits) out.push_back(f.second);
  return out;
}

namespace {

std::string where(const MigGpuView& v, const MigOccupant& o) {
  return text::cat("GPU ", v.gpu->index, " gi ", o.gi);
}

std::optional<std::uint32_t> pinned_start(const Request& r) {
  return r.gpu ? r.gpu->mig_start : std::nullopt;
}

std::optional<MigPlan> reuse_plan(const MigGpuView& v, const MigProfile& p, std::optional<std::uint32_t> start) {
  for (const MigOccupant& o : v.occupants) {
    if (o.profile_id != p.id || !o.reusable || (start && o.placement.start != *start)) continue;
    MigPlan plan{v.gpu->index, v.gpu->uuid, o.uuids.front()};
    plan.reason = text::cat("dynamic MIG: idle ", p.name, " on ", where(v, o), " reused");
    return plan;
  }
  return std::nullopt;
}

MigPlan create_plan(const MigGpuView& v, const MigProfile& p, const PlacementChoice& c) {
  MigPlan plan{v.gpu->index, v.gpu->uuid};
  std::vector<std::string> gone;
  for (std::size_t i : c.destroyed) {
    const MigOccupant& o = v.occupants[i];
    plan.destroy.push_back(MigDestroyStep{o.gi, o.profile_name, o.placement, o.uuids});
    gone.push_back(placement_text(o.profile_name, o.placement));
  }
  plan.create = MigCreateStep{p.id, p.name, {c.start, p.memory_slices}};
  plan.reason = text::cat("dynamic MIG: new ", placement_text(p.name, plan.create.placement), " on GPU ", v.gpu->index,
                          gone.empty() ? "" : " after destroying idle " + text::join(gone, ", "), " (", c.score,
                          " usable memory slices left)");
  return plan;
}

// Why nothing fits: the GPUs' profiles or the instances in the way.
std::string refusal(const Request& r, const std::vector<MigGpuView>& views, bool any_candidate) {
  std::vector<std::string> parts;
  for (const MigGpuView& v : views) {
    std::vector<std::string> held;
    for (const MigOccupant& o : v.occupants) {
      std::string who = o.state == OccupantState::busy      ? " (" + o.holder + ")"
                        : o.state == OccupantState::blocked ? " (no compute instance)"
                                                            : " (idle)";
      held.push_back(placement_text(o.profile_name, o.placement) + who);
    }
    parts.push_back(text::cat("GPU ", v.gpu->index, ": ", held.empty() ? "no instances" : text::join(held, ", ")));
  }
  if (!any_candidate && r.kind == SizeKind::mig_profile)
    return text::cat("no dynamic MIG GPU offers profile ", r.mig_profile, "; gpufrac info lists each GPU's profiles");
  if (!any_candidate) return text::cat("no MIG profile of a dynamic MIG GPU holds ", size_text(r));
  return text::cat("no MIG instance for ", size_text(r),
                   " fits on a dynamic MIG GPU, even after destroying idle ones: ", text::join(parts, "; "));
}

}  // namespace

Result<MigPlan> plan_mig(const Request& r, const std::vector<MigGpuView>& views) {
  std::vector<std::vector<const MigProfile*>> candidates;
  std::size_t ranks = 0;
  for (const MigGpuView& v : views) {
    candidates.push_back(mig_candidate_profiles(r, *v.gpu));
    ranks = std::max(ranks, candidates.back().size());
  }
  for (std::size_t k = 0; k < ranks; ++k) {
    for (std::size_t g = 0; g < views.size(); ++g)
      if (k < candidates[g].size())
        if (auto plan = reuse_plan(views[g], *candidates[g][k], pinned_start(r))) return std::move(*plan);
    std::optional<PlacementChoice> best;
    std::size_t best_gpu = 0;
    for (std::size_t g = 0; g < views.size(); ++g) {
      if (k >= candidates[g].size()) continue;
      auto c = mig_detail::best_placement(views[g], *candidates[g][k], pinned_start(r));
      if (c && (!best || mig_detail::better(*c, *best))) {
        best = std::move(c);
        best_gpu = g;
      }
    }
    if (best) return create_plan(views[best_gpu], *candidates[best_gpu][k], *best);
  }
  return user_error(refusal(r, views, ranks > 0));
}

}  // namespace gpufrac
