// Multi-GPU shares (gpufrac.io/gpus: N): the share on N distinct GPUs, all or none. Each GPU is
// judged as a single-GPU share pinned there (memory, time, max-shares-per-gpu, whole-GPU rules;
// GPUs in MIG mode never take part), then the set is chosen by topology and policy
// (core/allocator/topology_place.hpp), or is the pinned list. Pure, like allocate().
#include <algorithm>

#include "core/allocator/allocator.hpp"
#include "core/allocator/allocator_detail.hpp"
#include "core/allocator/load.hpp"
#include "core/allocator/topology_place.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac {

using namespace alloc_detail;

namespace {

// The request as it stands on one GPU: the same size and compute, no count, no pins.
Request per_gpu(const Request& r) {
  Request one = r;
  one.gpus.reset();
  one.sized_by_gpus = false;
  one.gpu.reset();
  one.gpu_list.clear();
  return one;
}

// The GPUs the request may use: those its list pins (each once), else every GPU by index.
Result<Candidates> multi_candidates(const Request& r, const Inventory& inv) {
  if (inv.gpus.empty()) return user_error("this node has no GPU");
  if (r.gpu_count() > inv.gpus.size())
    return user_error(text::cat(annotation::kGpus, ": ", r.gpu_count(), " GPUs asked for and this node has ",
                                inv.gpus.size(), "; use 1 to ", inv.gpus.size()));
  if (r.gpu_list.empty()) return gpus_by_index(inv);
  Candidates out;
  for (const auto& pin : r.gpu_list) {
    auto g = pinned_gpu(pin, inv);
    if (!g) return std::unexpected(g.error());
    if (std::find(out.begin(), out.end(), *g) != out.end())
      return user_error(text::cat(annotation::kGpu, ": GPU ", (*g)->index, " is named twice (", pin.describe(),
                                  "); name each GPU once"));
    out.push_back(*g);
  }
  std::sort(out.begin(), out.end(), [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
  return out;
}

// One GPU in the refusal: why it cannot take the share, or what it has.
std::string fit_text(const ShareFit& f) {
  const std::string name = text::cat("GPU ", f.gpu->index);
  if (!f.why_not.empty()) return f.why_not;
  if (f.ok) return name + (f.whole ? " is free" : text::cat(" has room (", text::format_bytes(f.free), " free)"));
  if (!f.memory_fits())
    return text::cat(name, " ", text::format_bytes(f.free), " free (needs ", text::format_bytes(f.bytes), ")");
  return text::cat(name, " ", format_compute(f.compute_free), " of its time free (needs ", format_compute(f.compute),
                   ")");
}

// "fraction=0.5 gpus=2 needs 2 GPUs and 1 can take it: GPU 0 has room (20.3 GiB free), GPU 1 9.9
// GiB free (needs 19.8 GiB)".
std::string multi_refusal(const Request& r, const std::vector<ShareFit>& fits) {
  const auto able = std::count_if(fits.begin(), fits.end(), [](const ShareFit& f) { return f.ok; });
  std::vector<std::string> items;
  for (const auto& f : fits) items.push_back(fit_text(f));
  return text::cat(r.describe(), " needs ", r.gpu_count(), " GPUs and ", able == 0 ? "none" : text::cat("only ", able),
                   " can take it: ", text::join(items, ", "));
}

// The link between two GPUs as placement ranks it (unknown when the inventory does not say).
std::uint32_t distance(const Gpu& a, const Gpu& b) {
  const GpuLink* l = a.link_to(b.uuid);
  return link_distance(l ? *l : GpuLink{});
}

std::uint64_t fullness_ppm(const ShareFit& f) {
  const std::uint64_t total = std::max<std::uint64_t>(1, f.gpu->memory_bytes);
  return static_cast<std::uint64_t>(static_cast<unsigned __int128>(f.reserved) * 1'000'000 / total);
}

// The fits that take part, chosen by topology, then policy, then index.
std::vector<const ShareFit*> place(const Request& r, const std::vector<const ShareFit*>& able,
                                   const AllocationConfig& cfg) {
  if (!r.gpu_list.empty()) return able;  // pinned: every listed GPU, already checked
  PlacementInput in;
  in.count = r.gpu_count();
  in.policy = r.policy.value_or(cfg.policy);
  for (const ShareFit* a : able) {
    in.fullness.push_back(fullness_ppm(*a));
    in.distance.emplace_back();
    for (const ShareFit* b : able) in.distance.back().push_back(a == b ? 0 : distance(*a->gpu, *b->gpu));
  }
  std::vector<const ShareFit*> out;
  for (auto i : best_gpu_set(in)) out.push_back(able[i]);
  return out;
}

// Why these GPUs: "gpus=2 on GPUs 2,3 (worst link NV12; binpack)", "pinned: GPUs 0,2 (...)".
std::string multi_reason(const Request& r, const std::vector<const ShareFit*>& chosen, const AllocationConfig& cfg) {
  std::vector<std::string> indices;
  std::uint32_t worst = 0;
  const GpuLink* worst_link = nullptr;
  for (const ShareFit* a : chosen) {
    indices.push_back(text::cat(a->gpu->index));
    for (const ShareFit* b : chosen)
      if (const GpuLink* l = a == b ? nullptr : a->gpu->link_to(b->gpu->uuid); l && link_distance(*l) >= worst) {
        worst = link_distance(*l);
        worst_link = l;
      }
  }
  const std::string link = worst_link ? link_text(*worst_link) : "?";
  if (!r.gpu_list.empty()) return text::cat("pinned: GPUs ", text::join(indices, ","), " (worst link ", link, ")");
  return text::cat("gpus=", r.gpu_count(), " on GPUs ", text::join(indices, ","), " (worst link ", link, "; ",
                   to_string(r.policy.value_or(cfg.policy)), ")");
}

}  // namespace

Result<std::vector<Grant>> allocate_gpus(const Request& r, const Inventory& inv, const std::vector<LedgerEntry>& live,
                                         const AllocationConfig& cfg, const DynamicMig& dyn, const MigHolder& holder,
                                         const std::vector<MpsGpuRecord>& mps) {
  if (!r.multi_gpu()) {
    auto g = allocate(r, inv, live, cfg, dyn, holder, mps);
    if (!g) return std::unexpected(g.error());
    return std::vector<Grant>{std::move(*g)};
  }
  auto gpus = multi_candidates(r, inv);
  if (!gpus) return std::unexpected(gpus.error());
  if (auto ok = check_compute_intent(r, cfg); !ok) return std::unexpected(ok.error());
  const Load load = compute_load(inv, live, mps);
  const Request one = per_gpu(r);
  std::vector<ShareFit> fits;
  for (const Gpu* g : *gpus) fits.push_back(evaluate_share(*g, one, load.of(g->uuid), cfg));
  std::vector<const ShareFit*> able;
  for (const auto& f : fits)
    if (f.ok) able.push_back(&f);
  if (able.size() < r.gpu_count())
    return user_error(multi_refusal(r, fits) + (r.gpu_list.empty() ? "" : " (pinned by gpufrac.io/gpu)"));
  const auto chosen = place(r, able, cfg);
  const std::string why = multi_reason(r, chosen, cfg);
  std::vector<Grant> out;
  for (const ShareFit* f : chosen) out.push_back(share_grant(*f, one, why));
  return out;
}

}  // namespace gpufrac
