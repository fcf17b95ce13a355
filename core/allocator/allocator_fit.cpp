// The compute a share books and the words of a share refused everywhere (rules in allocator.hpp).
#include <algorithm>

#include "core/allocator/allocator_detail.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac::alloc_detail {

namespace {

std::string size_text(const Request& r) {
  return text::split(r.describe(), ' ')[0];
}

// "fraction=0.25 compute=30", "compute=30" (compute alone), "memory=4Gi" (the default share).
std::string share_text(const Request& r) {
  std::string out = size_text(r);
  if (r.compute_ppm && !r.sized_by_compute) out += " compute=" + format_compute_percent(*r.compute_ppm);
  return out;
}

std::string pin_text(bool pinned) {
  return pinned ? " (pinned by gpufrac.io/gpu)" : "";
}

bool short_of_memory(const ShareFit& f) {
  return f.why_not.empty() && !f.memory_fits();
}
bool short_of_time(const ShareFit& f) {
  return f.why_not.empty() && f.memory_fits() && !f.compute_fits();
}

// Memory is short wherever a GPU could otherwise take the request (the words from before compute).
std::string memory_refusal(const Request& r, const std::vector<ShareFit>& fits, bool pinned) {
  bool all_whole = true;
  std::vector<std::uint64_t> needs;
  for (const auto& f : fits) {
    all_whole = all_whole && f.whole;
    if (f.why_not.empty() && !f.whole && std::find(needs.begin(), needs.end(), f.bytes) == needs.end())
      needs.push_back(f.bytes);
  }
  std::vector<std::string> items;
  for (const auto& f : fits) {
    if (!f.why_not.empty())
      items.push_back(f.why_not);
    else if (needs.size() == 1)
      items.push_back(text::cat("GPU ", f.gpu->index, " ", text::format_bytes(f.free)));
    else
      items.push_back(text::cat("GPU ", f.gpu->index, " ", text::format_bytes(f.free), " free (needs ",
                                text::format_bytes(f.bytes), ")"));
  }
  std::string head = "no GPU can take " + share_text(r);
  if (all_whole)
    head = "no GPU is free for a whole GPU";
  else if (needs.size() == 1) {
    head = "no GPU has " + text::format_bytes(needs[0]) + " free";
    if (r.kind == SizeKind::fraction) head += " for " + size_text(r);
  } else if (needs.size() > 1)
    head = "no GPU has room for " + size_text(r);
  return head + ": " + text::join(items, ", ") + pin_text(pinned);
}

// Time is short wherever memory is not: "no GPU has 30 % of its time free for compute=30: GPU 0 20 %".
std::string compute_refusal(const Request& r, const std::vector<ShareFit>& fits, bool pinned) {
  std::vector<std::uint32_t> needs;
  for (const auto& f : fits)
    if (f.why_not.empty() && std::find(needs.begin(), needs.end(), f.compute) == needs.end())
      needs.push_back(f.compute);
  std::vector<std::string> items;
  for (const auto& f : fits) {
    if (!f.why_not.empty())
      items.push_back(f.why_not);
    else if (needs.size() == 1)
      items.push_back(text::cat("GPU ", f.gpu->index, " ", format_compute(f.compute_free)));
    else
      items.push_back(text::cat("GPU ", f.gpu->index, " ", format_compute(f.compute_free), " free (needs ",
                                format_compute(f.compute), ")"));
  }
  const std::string what = r.compute_ppm ? "compute=" + format_compute_percent(*r.compute_ppm)
                                         : size_text(r) + " (its default compute share)";
  const std::string head = needs.size() == 1
                               ? text::cat("no GPU has ", format_compute(needs[0]), " of its time free for ", what)
                               : "no GPU has the time for " + what;
  return head + ": " + text::join(items, ", ") + pin_text(pinned);
}

// Some GPUs lack memory, others time: each GPU says which.
std::string mixed_refusal(const Request& r, const std::vector<ShareFit>& fits, bool pinned) {
  std::vector<std::string> items;
  for (const auto& f : fits) {
    if (!f.why_not.empty())
      items.push_back(f.why_not);
    else if (short_of_memory(f))
      items.push_back(text::cat("GPU ", f.gpu->index, " ", text::format_bytes(f.free), " free (needs ",
                                text::format_bytes(f.bytes), ")"));
    else
      items.push_back(text::cat("GPU ", f.gpu->index, " ", format_compute(f.compute_free), " of its time free (needs ",
                                format_compute(f.compute), ")"));
  }
  return "no GPU has room for " + share_text(r) + ": " + text::join(items, ", ") + pin_text(pinned);
}

}  // namespace

std::uint32_t share_compute_ppm(const Request& r, const Gpu& g, std::uint64_t bytes, bool whole,
                                const AllocationConfig& cfg) {
  if (r.compute_ppm) return *r.compute_ppm;
  if (cfg.compute == ComputeManagement::unmanaged) return 0;
  if (whole) return kWholeGpuComputePpm;
  return default_compute_ppm(bytes, gpu_capacity(g, cfg.overcommit));
}

Result<> check_compute_intent(const Request& r, const AllocationConfig& cfg) {
  if (r.compute_ppm || cfg.compute == ComputeManagement::managed || (!r.compute_mode && !r.priority)) return {};
  return user_error(text::cat(r.compute_mode ? annotation::kComputeMode : annotation::kPriority,
                              ": needs a compute share, and allocation.compute is unmanaged on this node; add ",
                              annotation::kCompute));
}

std::string share_refusal(const Request& r, const std::vector<ShareFit>& fits, bool pinned) {
  const bool time = std::any_of(fits.begin(), fits.end(), short_of_time);
  const bool memory = std::any_of(fits.begin(), fits.end(), short_of_memory);
  if (!time) return memory_refusal(r, fits, pinned);
  return memory ? mixed_refusal(r, fits, pinned) : compute_refusal(r, fits, pinned);
}

}  // namespace gpufrac::alloc_detail
