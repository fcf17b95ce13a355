// The planner's view of a dynamic GPU (mig_plan.hpp): its GPU instances with their compute
// instances, each busy, idle or unrecorded from the bookings and idle records, and what the
// requester and gpufrac hold of them.
#include <algorithm>
#include <map>

#include "core/mig/mig_plan.hpp"
#include "core/quantity.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

template <class C, class V>
bool contains(const C& c, const V& v) {
  return std::find(c.begin(), c.end(), v) != c.end();
}

MigCiOccupant ci_of(const MigInstance& m, const std::vector<LedgerEntry>& live, const std::vector<MigIdleRecord>& idle,
                    const std::vector<std::string>& made) {
  MigCiOccupant c{m.ci_id, m.uuid, m.ci_profile_id, m.compute_slices, m.ci_start};
  c.caps = !m.cap_nodes.empty();
  c.made = contains(made, m.uuid);
  auto booked = std::find_if(live.begin(), live.end(), [&](const LedgerEntry& e) { return e.device_uuid == m.uuid; });
  const bool recorded = std::any_of(idle.begin(), idle.end(), [&](const MigIdleRecord& r) { return r.uuid == m.uuid; });
  c.state = booked != live.end() ? OccupantState::busy : recorded ? OccupantState::idle : OccupantState::unrecorded;
  for (const LedgerEntry& e : live)
    if (e.device_uuid == m.uuid) {
      if (c.holder.empty()) c.holder = e.container_id;
      c.bytes = saturating_add(c.bytes, e.bytes);
    }
  return c;
}

// The GPU instance's state from its compute instances': busy when one is, idle when all are.
void classify(MigOccupant& o, const std::vector<MigIdleRecord>& idle) {
  bool all_idle = true;
  for (const MigCiOccupant& c : o.cis) {
    o.uuids.push_back(c.uuid);
    if (c.state == OccupantState::busy && o.holder.empty()) o.holder = c.holder;
    all_idle = all_idle && c.state == OccupantState::idle;
    for (const MigIdleRecord& r : idle)
      if (r.uuid == c.uuid) o.idle_since = std::max(o.idle_since, r.since);
  }
  o.state = !o.holder.empty() ? OccupantState::busy : all_idle ? OccupantState::idle : OccupantState::unrecorded;
}

}  // namespace

bool MigOccupant::split() const {
  return std::any_of(cis.begin(), cis.end(), [&](const MigCiOccupant& c) { return c.slices < compute_slices; });
}

std::uint64_t MigOccupant::booked() const {
  std::uint64_t sum = 0;
  for (const MigCiOccupant& c : cis) sum = saturating_add(sum, c.bytes);
  return sum;
}

bool MigOccupant::destroyable() const {
  if (state != OccupantState::idle && state != OccupantState::unrecorded) return false;
  return !split() || std::all_of(cis.begin(), cis.end(), [](const MigCiOccupant& c) { return c.made; });
}

MigGpuView mig_view(const Gpu& gpu, const std::vector<LedgerEntry>& live, const std::vector<MigIdleRecord>& idle,
                    const std::vector<MigForeign>& foreign, const std::vector<std::string>& made,
                    const MigHolder& holder) {
  std::map<std::uint32_t, std::vector<const MigInstance*>> by_gi;
  for (const auto& m : gpu.mig_instances) by_gi[m.gi_id].push_back(&m);
  const auto held = held_gpu_instances(live, holder);
  MigGpuView view{&gpu, {}};
  for (auto& [gi, cis] : by_gi) {
    std::sort(cis.begin(), cis.end(), [](const MigInstance* a, const MigInstance* b) { return a->ci_id < b->ci_id; });
    const MigProfile* p = gpu.profile_by_id(cis.front()->profile_id);
    MigOccupant o{gi, cis.front()->profile_id, cis.front()->profile_name, cis.front()->placement,
                  p ? p->compute_slices : cis.front()->compute_slices};
    for (const MigInstance* m : cis) o.cis.push_back(ci_of(*m, live, idle, made));
    classify(o, idle);
    o.held = contains(held, std::pair{gpu.uuid, gi});
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

}  // namespace gpufrac
