#include "core/allocator/allocator.hpp"

#include <algorithm>

#include "core/allocator/allocator_detail.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac {

using namespace alloc_detail;

namespace {

std::string size_text(const Request& r) {
  return text::split(r.describe(), ' ')[0];
}

bool wants_whole(const Request& r, const Gpu& g) {
  return r.kind == SizeKind::fraction ? r.fraction >= kWholeGpuPpm : r.memory_bytes == g.memory_bytes;
}

std::string why_not(const ShareFit& f, const Request& r, const DeviceLoad& d, const AllocationConfig& cfg) {
  const Gpu& g = *f.gpu;
  const std::string name = text::cat("GPU ", g.index);
  const std::uint32_t n = d.shares();
  if (g.mig_enabled) return name + " is in MIG mode";
  if (d.exclusive != nullptr) return name + " is used whole by " + d.exclusive->container_id;
  if (f.whole && n > 0) return text::cat(name, " has ", n, n == 1 ? " share" : " shares");
  if (auto sm = sm_why_not(g, r, d, cfg); !sm.empty()) return sm;
  if (!f.whole && cfg.max_shares_per_gpu != 0 && n >= cfg.max_shares_per_gpu)
    return text::cat(name, " has ", n, " shares (max-shares-per-gpu ", cfg.max_shares_per_gpu, ")");
  if (r.kind == SizeKind::memory && r.memory_bytes > g.memory_bytes)
    return text::cat(name, " has ", text::format_bytes(g.memory_bytes), " in all");
  if (f.bytes == 0) return text::cat(name, ": ", size_text(r), " is less than 1 MiB");
  return "";
}

}  // namespace

namespace alloc_detail {

ShareFit evaluate_share(const Gpu& g, const Request& r, const DeviceLoad& d, const AllocationConfig& cfg) {
  ShareFit f;
  f.gpu = &g;
  f.whole = wants_whole(r, g);
  if (f.whole)
    f.bytes = g.memory_bytes;
  else if (r.kind == SizeKind::memory)
    f.bytes = r.memory_bytes;
  else
    f.bytes = fraction_bytes(g.memory_bytes, r.fraction);
  f.reserved = d.reserved;
  const std::uint64_t cap = gpu_capacity(g, cfg.overcommit);
  f.free = cap > d.reserved ? cap - d.reserved : 0;
  f.compute = share_compute_ppm(r, g, f.bytes, f.whole, cfg);
  f.compute_free = compute_free(d);
  f.sm_mode = d.sm_mode();
  f.why_not = why_not(f, r, d, cfg);
  f.ok = f.why_not.empty() && f.memory_fits() && f.compute_fits();
  return f;
}

// The burst limit on the GPU granted: the limit's bytes (a fraction of this GPU's memory), at most
// the GPU's memory; 0 when it is not above the booking.
std::uint64_t limit_on(const ShareFit& f, const Request& r) {
  if (!r.limit || f.whole) return 0;
  const std::uint64_t total = f.gpu->memory_bytes;
  const std::uint64_t limit =
      std::min(total, r.limit->is_fraction ? fraction_bytes(total, r.limit->fraction) : r.limit->bytes);
  return limit > f.bytes ? limit : 0;
}

Grant share_grant(const ShareFit& f, const Request& r, std::string reason) {
  const Gpu& g = *f.gpu;
  const bool compute = f.compute != 0;
  return Grant{g.uuid,
               g.index,
               g.uuid,
               std::nullopt,
               f.bytes,
               f.whole,
               std::move(reason),
               f.compute,
               compute ? r.compute_mode.value_or(ComputeMode::fair) : ComputeMode::fair,
               compute ? r.priority.value_or(ComputePriority::normal) : ComputePriority::normal,
               limit_on(f, r),
               0};
}

}  // namespace alloc_detail

namespace {

// a is strictly better than b: an SM share takes a GPU in MPS mode before an empty one (no daemon
// to start); then binpack prefers the higher reserved/total, spread the lower.
bool better(const ShareFit& a, const ShareFit& b, Policy policy, bool sm) {
  if (sm && a.sm_mode != b.sm_mode) return a.sm_mode;
  const auto lhs = static_cast<unsigned __int128>(a.reserved) * b.gpu->memory_bytes;
  const auto rhs = static_cast<unsigned __int128>(b.reserved) * a.gpu->memory_bytes;
  return policy == Policy::binpack ? lhs > rhs : lhs < rhs;
}

std::string reason(const ShareFit& f, Policy policy, bool pinned, bool sm) {
  const Gpu& g = *f.gpu;
  if (f.whole) return text::cat("whole GPU ", g.index, ": no other bookings");
  if (sm && !f.sm_mode)
    return text::cat(pinned ? "pinned: " : "sm: ", "GPU ", g.index, " is empty and switches to SM mode (MPS)");
  if (sm)
    return text::cat(pinned ? "pinned: " : "sm: ", "GPU ", g.index, " is in SM mode with ",
                     format_compute(f.compute_free), " of its SMs free before");
  const std::string state =
      text::cat(" (", text::format_bytes(f.reserved), " of ", text::format_bytes(g.memory_bytes), " reserved before)");
  if (pinned) return text::cat("pinned: GPU ", g.index, state);
  if (policy == Policy::spread) return text::cat("spread: GPU ", g.index, " is the emptiest GPU with room", state);
  return text::cat("binpack: GPU ", g.index, " is the fullest GPU with room", state);
}

Result<Grant> allocate_share(const Request& r, const Candidates& gpus, const Load& load, const AllocationConfig& cfg) {
  const Policy policy = r.policy.value_or(cfg.policy);
  std::vector<ShareFit> fits;
  const ShareFit* best = nullptr;
  for (const Gpu* g : gpus) fits.push_back(evaluate_share(*g, r, load.of(g->uuid), cfg));
  const bool sm = r.compute_mode == ComputeMode::sm;
  for (const auto& f : fits)
    if (f.ok && (best == nullptr || better(f, *best, policy, sm))) best = &f;
  if (best == nullptr && sm) return user_error(sm_refusal(r, fits, r.gpu.has_value()));
  if (best == nullptr) return user_error(share_refusal(r, fits, r.gpu.has_value()));
  return share_grant(*best, r, reason(*best, policy, r.gpu.has_value(), sm));
}

}  // namespace

namespace alloc_detail {

std::string index_list(const Inventory& inv) {
  std::vector<std::string> out;
  bool contiguous = true;
  for (std::size_t i = 0; i < inv.gpus.size(); ++i) {
    contiguous = contiguous && inv.gpus[i].index == i;
    out.push_back(text::cat(inv.gpus[i].index));
  }
  if (contiguous && out.size() > 2) return text::cat("0-", out.size() - 1);
  return text::join(out, ", ");
}

Result<const Gpu*> pinned_gpu(const GpuPin& pin, const Inventory& inv) {
  const Gpu* g = pin.index ? inv.gpu_by_index(*pin.index) : inv.gpu_by_uuid(pin.uuid);
  if (g == nullptr)
    return user_error(text::cat(annotation::kGpu, ": GPU ", pin.describe(), " is not on this node; use ",
                                index_list(inv), " or a UUID that gpufrac info lists"));
  return g;
}

Candidates gpus_by_index(const Inventory& inv) {
  Candidates all;
  for (const auto& g : inv.gpus) all.push_back(&g);
  std::sort(all.begin(), all.end(), [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
  return all;
}

}  // namespace alloc_detail

namespace {

Result<Candidates> candidates(const Request& r, const Inventory& inv) {
  if (inv.gpus.empty()) return user_error("this node has no GPU");
  if (!r.gpu) return gpus_by_index(inv);
  auto g = pinned_gpu(*r.gpu, inv);
  if (!g) return std::unexpected(g.error());
  return Candidates{*g};
}

// MIG requests on static GPUs first (existing instances only), then the planner on dynamic ones.
Result<Grant> allocate_mig(const Request& r, const Candidates& gpus, const MigContext& ctx) {
  if (r.gpu && !r.gpu->mig_uuid.empty()) return mig_pinned(r, gpus, ctx);
  Candidates fixed, dynamic;
  for (const Gpu* g : gpus) (ctx.dynamic.dynamic(*g) ? dynamic : fixed).push_back(g);
  const bool fixed_mig = std::any_of(fixed.begin(), fixed.end(), [](const Gpu* g) { return g->mig_enabled; });
  auto from_fixed = r.kind == SizeKind::mig_profile ? mig_by_profile(r, fixed, ctx) : mig_for_share(r, fixed, ctx);
  if (from_fixed || dynamic.empty()) return from_fixed;
  auto planned = mig_dynamic(r, dynamic, ctx);
  if (planned || !fixed_mig) return planned;
  return user_error(from_fixed.error().message + "; " + planned.error().message);
}

}  // namespace

Result<Grant> allocate(const Request& r, const Inventory& inv, const std::vector<LedgerEntry>& live,
                       const AllocationConfig& cfg, const DynamicMig& dyn, const MigHolder& holder,
                       const std::vector<MpsGpuRecord>& mps) {
  auto gpus = candidates(r, inv);
  if (!gpus) return std::unexpected(gpus.error());
  const Load load = compute_load(inv, live, mps);
  const MigContext ctx{load, live, dyn, holder};
  if (r.kind == SizeKind::mig_profile) return allocate_mig(r, *gpus, ctx);
  if (auto ok = check_compute_intent(r, cfg); !ok) return std::unexpected(ok.error());
  auto share = allocate_share(r, *gpus, load, cfg);
  if (share || !cfg.mig_serves_fractions || !reaches_mig(r)) return share;
  auto mig = allocate_mig(r, *gpus, ctx);
  if (mig) return mig;
  return user_error(share.error().message + "; " + mig.error().message);
}

}  // namespace gpufrac
