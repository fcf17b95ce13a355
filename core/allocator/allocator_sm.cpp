// SM shares in the allocator (docs/architecture.md "SM sharing"): a GPU is in one compute mode at a
// time. An SM share (compute-mode sm) goes on a GPU in MPS mode, or on an empty GPU that may switch;
// a time share never on a GPU in MPS mode. What each GPU is, in the words refusals use.
#include "core/allocator/allocator_detail.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac::alloc_detail {

namespace {

// MPS with execution resource provisioning (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) is Volta and newer.
constexpr int kMpsSmLimitCcMajor = 7;

std::string sm_mode_text(const DeviceLoad& d) {
  if (d.sm_shares == 0) return "in SM mode (MPS, no SM share yet)";
  return text::cat("in SM mode (MPS, ", d.sm_shares, d.sm_shares == 1 ? " SM share)" : " SM shares)");
}

}  // namespace

std::string sm_why_not(const Gpu& g, const Request& r, const DeviceLoad& d, const AllocationConfig& cfg) {
  const std::string name = text::cat("GPU ", g.index);
  if (r.compute_mode != ComputeMode::sm) return d.sm_mode() ? text::cat(name, " is ", sm_mode_text(d)) : "";
  if (g.cc_major < kMpsSmLimitCcMajor)
    return text::cat(name, " (compute capability ", g.cc_major, ".", g.cc_minor,
                     ") cannot cap SMs per MPS client (Volta or newer)");
  const std::uint32_t time = d.time_shares();
  if (time != 0) return text::cat(name, " is time-sliced (", time, time == 1 ? " share)" : " shares)");
  if (!d.sm_mode() && !cfg.sm_sharing.may_switch(g.index, g.uuid))
    return text::cat(name, " may not switch to SM mode (compute.sm-sharing: ", to_string(cfg.sm_sharing.mode), ")");
  return "";
}

std::string sm_refusal(const Request& r, const std::vector<ShareFit>& fits, bool pinned) {
  std::vector<std::string> items;
  for (const auto& f : fits) {
    const std::string name = text::cat("GPU ", f.gpu->index);
    if (!f.why_not.empty())
      items.push_back(f.why_not);
    else if (!f.memory_fits())
      items.push_back(
          text::cat(name, " ", text::format_bytes(f.free), " free (needs ", text::format_bytes(f.bytes), ")"));
    else
      items.push_back(text::cat(name, " is in SM mode with ", format_compute(f.compute_free), " of its SMs free"));
  }
  return text::cat("no GPU can take ", r.describe(), ": ", text::join(items, ", "),
                   pinned ? " (pinned by gpufrac.io/gpu)" : "");
}

}  // namespace gpufrac::alloc_detail
