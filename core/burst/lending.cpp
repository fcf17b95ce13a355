#include "core/burst/lending.hpp"

#include <algorithm>

#include "core/quantity.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

// The allowance for a share's processes (at least one: an asker whose process the driver does not
// list yet still has a context).
std::uint64_t allowed(std::uint64_t per_process, std::uint32_t processes) {
  return per_process * std::max<std::uint32_t>(processes, 1);
}

std::string gib(std::uint64_t bytes) {
  return text::format_bytes(bytes);
}

}  // namespace

std::uint64_t lend_ceiling(const std::vector<BurstShare>& shares, std::size_t i, std::uint64_t total) {
  std::uint64_t others = 0;
  for (std::size_t j = 0; j < shares.size(); ++j)
    if (j != i) others = saturating_add(others, std::max(shares[j].request, shares[j].published));
  const std::uint64_t room = total > others ? total - others : 0;
  return std::max(shares[i].request, std::min(shares[i].limit, room));
}

std::uint64_t over_request(const BurstShare& s, std::uint64_t allowance) {
  const std::uint64_t within = saturating_add(s.request, s.processes == 0 ? 0 : allowed(allowance, s.processes));
  return s.held > within ? s.held - within : 0;
}

bool region_disagrees(const BurstShare& s, std::uint64_t allowance) {
  if (s.published > s.held) return true;
  return s.held - s.published > (s.processes == 0 ? 0 : allowed(allowance, s.processes));
}

const char* to_string(ReclaimAnswer a) {
  switch (a) {
    case ReclaimAnswer::freed:
      return "freed";
    case ReclaimAnswer::retry:
      return "retry";
    case ReclaimAnswer::refused:
      return "refused";
    case ReclaimAnswer::not_owner:
      return "not an owner";
    case ReclaimAnswer::none:
      return "no borrower";
    case ReclaimAnswer::untold:
      return "cannot be told apart";
  }
  return "?";
}

ReclaimStep plan_reclaim(const std::vector<BurstShare>& shares, std::size_t asker, std::uint64_t bytes,
                         std::uint64_t free, const BurstConfig& cfg) {
  const BurstShare& a = shares[asker];
  const std::uint64_t wants = saturating_add(a.held, bytes);
  const auto over = [&](const BurstShare& s) { return over_request(s, cfg.context_allowance); };
  if (wants > saturating_add(a.request, allowed(cfg.context_allowance, a.processes)))
    return {ReclaimAnswer::not_owner, std::nullopt,
            text::cat(a.key, " asks for ", gib(bytes), ", and the driver sees it hold ", gib(a.held),
                      " of its request ", gib(a.request), ": not an owner in need")};
  if (free >= bytes) return {ReclaimAnswer::retry, std::nullopt, text::cat("the GPU has ", gib(free), " free")};
  std::optional<std::size_t> victim;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (i == asker || over(shares[i]) == 0) continue;
    if (!victim || over(shares[i]) > over(shares[*victim]) ||
        (over(shares[i]) == over(shares[*victim]) && shares[i].held > shares[*victim].held))
      victim = i;
  }
  if (!victim) return {ReclaimAnswer::none, std::nullopt, "no other share holds memory past its request"};
  const BurstShare& v = shares[*victim];
  const std::string loan = text::cat(v.key, " holds ", gib(v.held), " of its request ", gib(v.request));
  if (cfg.reclaim == BurstReclaim::refuse)
    return {ReclaimAnswer::refused, std::nullopt, loan + "; burst.reclaim is refuse: it keeps its loan"};
  return {ReclaimAnswer::freed, victim, loan + " (the furthest past its request)"};
}

}  // namespace gpufrac
