// MIG choices of the allocator: an existing instance by profile, or the smallest idle instance
// that holds a share (mig-serves-fractions). Rules are in allocator.hpp.
#include <algorithm>
#include <tuple>

#include "core/allocator_detail.hpp"
#include "core/mig_profile_name.hpp"
#include "core/text.hpp"

namespace gpufrac::alloc_detail {

namespace {

std::string where(const Gpu& g, const MigInstance& m) {
  return text::cat("GPU ", g.index, " gi ", m.gi_id, " ci ", m.ci_id);
}

std::vector<const MigInstance*> by_gi_ci(const Gpu& g) {
  std::vector<const MigInstance*> out;
  for (const auto& m : g.mig_instances) out.push_back(&m);
  std::sort(out.begin(), out.end(), [](const MigInstance* a, const MigInstance* b) {
    return std::tie(a->gi_id, a->ci_id) < std::tie(b->gi_id, b->ci_id);
  });
  return out;
}

// "" when the instance can be given out; else why not.
std::string unusable(const MigInstance& m, const Load& load) {
  const DeviceLoad& d = load.of(m.uuid);
  if (!d.entries.empty()) return "in use by " + d.entries.front()->container_id;
  if (m.cap_nodes.empty()) return "has no capability device nodes (run nvidia-smi once)";
  return "";
}

// "GPU 0: 3g.40gb, 2g.20gb, 1g.10gb x2"
std::string profiles_of(const Gpu& g) {
  std::vector<std::pair<std::string, int>> counts;
  for (const MigInstance* m : by_gi_ci(g)) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == m->profile_name; });
    if (it == counts.end())
      counts.emplace_back(m->profile_name, 1);
    else
      ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [name, n] : counts) parts.push_back(n == 1 ? name : text::cat(name, " x", n));
  return text::cat("GPU ", g.index, ": ", parts.empty() ? "no instances" : text::join(parts, ", "));
}

std::uint64_t profile_memory(const Gpu& g, const MigInstance& m) {
  const MigProfile* p = g.profile_by_id(m.profile_id);
  return p != nullptr ? p->memory_mib * kMiB : m.memory_bytes;
}

std::string size_text(const Request& r) {
  return text::split(r.describe(), ' ')[0];
}

// A CDI MIG device pins one instance: every other instance is out of reach.
bool outside_pin(const Request& r, const MigInstance& m) {
  if (r.gpu && r.gpu->mig_start && m.placement.start != *r.gpu->mig_start) return true;
  return r.gpu && !r.gpu->mig_uuid.empty() && m.uuid != r.gpu->mig_uuid;
}

}  // namespace

Grant mig_grant(const Gpu& g, const MigInstance& m, std::string reason) {
  return Grant{m.uuid,         g.index, g.uuid,           MigRef{m.gi_id, m.ci_id, m.profile_name},
               m.memory_bytes, true,    std::move(reason)};
}

Result<Grant> mig_by_profile(const Request& r, const Candidates& gpus, const Load& load) {
  std::vector<std::string> busy, present;
  for (const Gpu* g : gpus) {
    if (!g->mig_enabled) continue;
    present.push_back(profiles_of(*g));
    for (const MigInstance* m : by_gi_ci(*g)) {
      if (canonical_mig_profile_or_same(m->profile_name) != r.mig_profile || outside_pin(r, *m)) continue;
      std::string problem = unusable(*m, load);
      if (problem.empty()) return mig_grant(*g, *m, "idle MIG instance " + m->profile_name + " on " + where(*g, *m));
      busy.push_back(where(*g, *m) + " " + problem);
    }
  }
  const std::string scope =
      r.gpu && !gpus.empty() ? text::cat("GPU ", gpus.front()->index, " is not") : std::string("no GPU is");
  if (present.empty()) return user_error(text::cat(scope, " in MIG mode; mig-profile=", r.mig_profile, " needs one"));
  if (busy.empty() && r.gpu && !r.gpu->mig_uuid.empty())
    return user_error(text::cat("MIG instance ", r.gpu->mig_uuid, " of profile ", r.mig_profile, " is not on GPU ",
                                gpus.front()->index, "; ", profiles_of(*gpus.front())));
  if (busy.empty())
    return user_error(text::cat("no MIG instance of profile ", r.mig_profile, " exists; ", text::join(present, "; ")));
  return user_error(text::cat("no idle MIG instance of profile ", r.mig_profile, ": ", text::join(busy, ", ")));
}

Result<Grant> mig_for_share(const Request& r, const Candidates& gpus, const Load& load) {
  using Key = std::tuple<std::uint64_t, std::uint64_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>;
  std::optional<Key> best_key;
  const Gpu* best_gpu = nullptr;
  const MigInstance* best = nullptr;
  std::uint64_t best_need = 0, best_slices = 0;
  for (const Gpu* g : gpus) {
    const std::uint64_t slices = g->memory_slices();
    if (!g->mig_enabled || slices == 0) continue;
    const std::uint64_t need = (static_cast<std::uint64_t>(r.fraction) * slices + kWholeGpuPpm - 1) / kWholeGpuPpm;
    for (const MigInstance* m : by_gi_ci(*g)) {
      const std::uint64_t memory = profile_memory(*g, *m);
      const bool fits = r.kind == SizeKind::fraction ? m->placement.size >= need : memory >= r.memory_bytes;
      if (!fits || outside_pin(r, *m) || !unusable(*m, load).empty()) continue;
      Key key = r.kind == SizeKind::fraction
                    ? Key{m->placement.size, memory, m->compute_slices, g->index, m->gi_id, m->ci_id}
                    : Key{memory, m->placement.size, m->compute_slices, g->index, m->gi_id, m->ci_id};
      if (best_key && !(key < *best_key)) continue;
      best_key = key;
      best_gpu = g;
      best = m;
      best_need = need;
      best_slices = slices;
    }
  }
  if (best == nullptr) return user_error("no idle MIG instance holds " + size_text(r));
  std::string why = r.kind == SizeKind::fraction
                        ? text::cat(" (", best_need, " of ", best_slices, " memory slices)")
                        : text::cat(" (", text::format_bytes(profile_memory(*best_gpu, *best)), ")");
  return mig_grant(*best_gpu, *best,
                   text::cat("mig-serves-fractions: smallest idle MIG instance holding ", size_text(r), why, ": ",
                             best->profile_name, " on ", where(*best_gpu, *best)));
}

}  // namespace gpufrac::alloc_detail
