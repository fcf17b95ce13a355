// MIG choices of the allocator on static GPUs: an existing MIG device (a compute instance) by
// profile, or the first idle one in mig_candidates order that holds a share (mig-serves-fractions,
// with or without compute). Rules are in allocator.hpp and core/mig/mig_fit.hpp.
#include <algorithm>
#include <tuple>

#include "core/allocator/allocator_detail.hpp"
#include "core/mig/mig_profile_name.hpp"
#include "core/request/compute_share.hpp"
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

// The candidate an instance is for the request (its rank and the bytes it books), if any.
std::optional<std::pair<std::size_t, std::uint64_t>> fit_of(const std::vector<MigCandidate>& cands,
                                                            const MigInstance& m) {
  for (std::size_t i = 0; i < cands.size(); ++i)
    if (cands[i].shape.gi->id == m.profile_id && cands[i].shape.ci.slices == m.compute_slices)
      return std::pair{i, cands[i].bytes};
  return std::nullopt;
}

// "" when the instance can be given out with `bytes` of its GPU instance's memory; else why not.
std::string unusable(const Gpu& g, const MigInstance& m, std::uint64_t bytes, const MigContext& ctx) {
  const DeviceLoad& d = ctx.load.of(m.uuid);
  if (!d.entries.empty()) return "in use by " + d.entries.front()->container_id;
  if (m.cap_nodes.empty())
    return "has no capability device nodes (the host's /proc/driver/nvidia-caps/mig-minors does not list it)";
  const auto held = held_gpu_instances(ctx.live, ctx.holder);
  if (std::find(held.begin(), held.end(), std::pair{g.uuid, m.gi_id}) != held.end())
    return text::cat("is in GPU instance ", m.gi_id, ", of which ", ctx.holder.container_id,
                     " holds a compute instance already (CUDA enumerates one per GPU instance)");
  const MigProfile* p = g.profile_by_id(m.profile_id);
  const std::uint64_t total = p ? gi_memory_bytes(*p) : m.memory_bytes;
  const std::uint64_t booked = gi_booked_bytes(ctx.live, g.uuid, m.gi_id);
  if (booked + bytes > total)
    return text::cat("has ", text::format_bytes(total > booked ? total - booked : 0),
                     " of its GPU instance's memory left (needs ", text::format_bytes(bytes), ")");
  return "";
}

// "GPU 0: 3g.40gb, 2g.20gb, 1g.10gb x2"
std::string profiles_of(const Gpu& g) {
  std::vector<std::pair<std::string, int>> counts;
  for (const MigInstance* m : by_gi_ci(g)) {
    const std::string name = mig_device_profile(g, *m);
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
    if (it == counts.end())
      counts.emplace_back(name, 1);
    else
      ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [name, n] : counts) parts.push_back(n == 1 ? name : text::cat(name, " x", n));
  return text::cat("GPU ", g.index, ": ", parts.empty() ? "no instances" : text::join(parts, ", "));
}

// "fraction=0.25", "memory=4Gi compute=40".
std::string size_text(const Request& r) {
  std::string out = text::split(r.describe(), ' ')[0];
  if (r.compute_ppm && !r.sized_by_compute) out += " compute=" + format_compute_percent(*r.compute_ppm);
  return out;
}

// A CDI MIG device pins one instance: every other instance is out of reach.
bool outside_pin(const Request& r, const MigInstance& m) {
  if (r.gpu && r.gpu->mig_start && m.placement.start != *r.gpu->mig_start) return true;
  return r.gpu && !r.gpu->mig_uuid.empty() && m.uuid != r.gpu->mig_uuid;
}

}  // namespace

Grant mig_grant(const Gpu& g, const MigInstance& m, std::uint64_t bytes, std::string reason) {
  return Grant{m.uuid, g.index, g.uuid,           MigRef{m.gi_id, m.ci_id, mig_device_profile(g, m)},
               bytes,  true,    std::move(reason)};
}

Result<Grant> mig_by_profile(const Request& r, const Candidates& gpus, const MigContext& ctx) {
  std::vector<std::string> busy, present;
  for (const Gpu* g : gpus) {
    if (!g->mig_enabled) continue;
    present.push_back(profiles_of(*g));
    const auto cands = mig_candidates(r, *g);
    for (const MigInstance* m : by_gi_ci(*g)) {
      auto fit = fit_of(cands, *m);
      if (!fit || outside_pin(r, *m)) continue;
      std::string problem = unusable(*g, *m, fit->second, ctx);
      if (problem.empty())
        return mig_grant(*g, *m, fit->second,
                         "idle MIG instance " + mig_device_profile(*g, *m) + " on " + where(*g, *m));
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

Result<Grant> mig_for_share(const Request& r, const Candidates& gpus, const MigContext& ctx) {
  using Key = std::tuple<std::size_t, std::uint32_t, std::uint32_t, std::uint32_t>;
  std::optional<Key> best_key;
  const Gpu* best_gpu = nullptr;
  const MigInstance* best = nullptr;
  std::uint64_t best_bytes = 0;
  for (const Gpu* g : gpus) {
    if (!g->mig_enabled || g->memory_slices() == 0) continue;
    const auto cands = mig_candidates(r, *g);
    for (const MigInstance* m : by_gi_ci(*g)) {
      auto fit = fit_of(cands, *m);
      if (!fit || outside_pin(r, *m) || !unusable(*g, *m, fit->second, ctx).empty()) continue;
      const Key key{fit->first, g->index, m->gi_id, m->ci_id};
      if (best_key && !(key < *best_key)) continue;
      best_key = key;
      best_gpu = g;
      best = m;
      best_bytes = fit->second;
    }
  }
  if (best == nullptr) return user_error("no idle MIG instance holds " + size_text(r));
  const std::string name = mig_device_profile(*best_gpu, *best);
  const std::uint64_t slices = best_gpu->memory_slices();
  const std::uint64_t need = (static_cast<std::uint64_t>(r.fraction) * slices + kWholeGpuPpm - 1) / kWholeGpuPpm;
  const std::string why = r.compute_ppm
                              ? text::cat(" (", best->multiprocessors, " of ", full_multiprocessors(*best_gpu),
                                          " SMs, ", text::format_bytes(best_bytes), ")")
                          : r.kind == SizeKind::fraction ? text::cat(" (", need, " of ", slices, " memory slices)")
                                                         : text::cat(" (", text::format_bytes(best_bytes), ")");
  return mig_grant(*best_gpu, *best, best_bytes,
                   text::cat("mig-serves-fractions: smallest idle MIG instance holding ", size_text(r), why, ": ", name,
                             " on ", where(*best_gpu, *best)));
}

}  // namespace gpufrac::alloc_detail
