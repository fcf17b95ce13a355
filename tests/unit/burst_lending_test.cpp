// The reclaimer's pure decisions (core/burst/lending.hpp): the ceilings it publishes from the usage
// the regions claim, who is a borrower by the driver's view, what a request for memory back gets,
// and the regions the driver contradicts.
#include <gtest/gtest.h>

#include "core/burst/lending.hpp"

namespace gpufrac {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kAllowance = 512ull << 20;  // burst.context-allowance's default
const BurstConfig kKill{BurstReclaim::kill, kAllowance};
const BurstConfig kRefuse{BurstReclaim::refuse, kAllowance};

BurstShare share(const char* key, std::uint64_t request, std::uint64_t limit, std::uint64_t published,
                 std::uint64_t held, std::uint32_t processes = 1) {
  return BurstShare{key, request * kGiB, limit * kGiB, published * kGiB, held * kGiB, processes};
}

TEST(BurstLending, TheCeilingIsWhatNoOtherShareBooksOrUses) {
  // 40 GiB: A (10, limit 30) alone may take its limit; with B booked at 20 only 20 is left to it.
  std::vector<BurstShare> s{share("a", 10, 30, 25, 25)};
  EXPECT_EQ(lend_ceiling(s, 0, 40 * kGiB), 30 * kGiB);
  s.push_back(share("b", 20, 20, 0, 0));
  EXPECT_EQ(lend_ceiling(s, 0, 40 * kGiB), 20 * kGiB);
  // B past its request (what it publishes) counts as what it uses; never below A's request.
  s[1] = share("b", 20, 38, 35, 35);
  EXPECT_EQ(lend_ceiling(s, 0, 40 * kGiB), 10 * kGiB);
  EXPECT_EQ(lend_ceiling(s, 1, 40 * kGiB), 20 * kGiB) << "A uses 25 (its request 10): 15 left to B, at least its 20";
}

TEST(BurstLending, ABorrowerIsPastItsRequestByTheDriversView) {
  EXPECT_EQ(over_request(share("a", 10, 30, 0, 25), kAllowance), 15 * kGiB - kAllowance);
  EXPECT_EQ(over_request(share("a", 10, 30, 25, 10), kAllowance), 0u);
  EXPECT_EQ(over_request(share("a", 10, 30, 0, 10, 0), kAllowance), 0u);
  // Each process's context the shim cannot see: a container at its request is no borrower.
  BurstShare at_request{"b", 20 * kGiB, 20 * kGiB, 20 * kGiB, 20 * kGiB + 2 * 300 * (1ull << 20), 2};
  EXPECT_EQ(over_request(at_request, kAllowance), 0u);
  EXPECT_EQ(over_request(at_request, 0), 600u << 20) << "without an allowance every byte counts (the fake driver)";
}

TEST(BurstLending, ARequestGetsTheFurthestBorrowerStopped) {
  std::vector<BurstShare> s{share("a", 10, 30, 25, 25), share("b", 20, 20, 14, 14), share("c", 5, 20, 12, 12)};
  const ReclaimStep step = plan_reclaim(s, 1, kGiB, kGiB / 2, kKill);
  EXPECT_EQ(step.answer, ReclaimAnswer::freed);
  ASSERT_TRUE(step.victim);
  EXPECT_EQ(*step.victim, 0u) << "a is 15 GiB past its request, c 7";
  EXPECT_EQ(step.why, "a holds 25.0 GiB of its request 10.0 GiB (the furthest past its request)");
  const ReclaimStep refused = plan_reclaim(s, 1, kGiB, kGiB / 2, kRefuse);
  EXPECT_EQ(refused.answer, ReclaimAnswer::refused);
  EXPECT_FALSE(refused.victim);
  EXPECT_EQ(refused.why, "a holds 25.0 GiB of its request 10.0 GiB; burst.reclaim is refuse: it keeps its loan");
}

TEST(BurstLending, OnlyAnOwnerInNeedGetsAnything) {
  std::vector<BurstShare> s{share("a", 10, 30, 25, 25), share("b", 20, 20, 0, 20)};
  // b claims nothing in its region but the driver sees 20 GiB: one more is past its request.
  const ReclaimStep liar = plan_reclaim(s, 1, kGiB, 0, kKill);
  EXPECT_EQ(liar.answer, ReclaimAnswer::not_owner);
  EXPECT_EQ(liar.why,
            "b asks for 1.0 GiB, and the driver sees it hold 20.0 GiB of its request 20.0 GiB: not an owner "
            "in need");
  // The borrower itself asking: not an owner.
  EXPECT_EQ(plan_reclaim(s, 0, kGiB, 0, kKill).answer, ReclaimAnswer::not_owner);
  // The memory is free already: retry. Nobody past a request: none.
  std::vector<BurstShare> quiet{share("a", 10, 30, 5, 5), share("b", 20, 20, 2, 2)};
  EXPECT_EQ(plan_reclaim(quiet, 1, kGiB, 2 * kGiB, kKill).answer, ReclaimAnswer::retry);
  EXPECT_EQ(plan_reclaim(quiet, 1, 4 * kGiB, 2 * kGiB, kKill).answer, ReclaimAnswer::none);
}

TEST(BurstLending, ARegionTheDriverContradictsIsFlagged) {
  EXPECT_TRUE(region_disagrees(share("a", 10, 30, 0, 25), kAllowance)) << "claims less than it holds";
  EXPECT_TRUE(region_disagrees(share("a", 10, 30, 25, 10), kAllowance)) << "claims more than it holds";
  EXPECT_FALSE(region_disagrees(share("a", 10, 30, 25, 25), kAllowance));
  BurstShare context{"b", 20 * kGiB, 20 * kGiB, 20 * kGiB, 20 * kGiB + (300ull << 20), 1};
  EXPECT_FALSE(region_disagrees(context, kAllowance)) << "the driver counts a context the shim does not see";
}

}  // namespace
}  // namespace gpufrac

namespace gpufrac {
namespace {

TEST(BurstConfigTest, TheBurstSection) {
  auto d = load_config_string("{}", "c.yaml");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->burst.reclaim, BurstReclaim::kill);
  EXPECT_EQ(d->burst.context_allowance, 512ull << 20);
  auto c = load_config_string("burst: {reclaim: refuse, context-allowance: 256Mi}\n", "c.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->burst.reclaim, BurstReclaim::refuse);
  EXPECT_EQ(c->burst.context_allowance, 256ull << 20);
  auto zero = load_config_string("burst: {context-allowance: 0}\n", "c.yaml");
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->burst.context_allowance, 0u);
  auto bad = load_config_string("burst: {reclaim: evict}\n", "c.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "c.yaml:1: burst.reclaim: \"evict\" is not accepted (accepted: kill, refuse, swap)");
  auto swap = load_config_string("burst: {reclaim: swap, cuda-library: /opt/libcuda.so.1}\n", "c.yaml");
  ASSERT_TRUE(swap) << swap.error().message;
  EXPECT_EQ(swap->burst.reclaim, BurstReclaim::swap);
  EXPECT_STREQ(to_string(swap->burst.reclaim), "swap");
  EXPECT_EQ(swap->burst.cuda_library, "/opt/libcuda.so.1");
  EXPECT_EQ(d->burst.cuda_library, "libcuda.so.1");
  EXPECT_EQ(d->swap.host_memory, 0u);
  auto budget = load_config_string("swap: {host-memory: 64Gi}\n", "c.yaml");
  ASSERT_TRUE(budget) << budget.error().message;
  EXPECT_EQ(budget->swap.host_memory, 64ull << 30);
  auto no_budget = load_config_string("swap: {host-memory: lots}\n", "c.yaml");
  ASSERT_FALSE(no_budget);
  EXPECT_EQ(no_budget.error().message,
            "c.yaml:1: swap.host-memory: \"lots\" is not a memory quantity; use an integer of MiB or a number with "
            "suffix Ki, Mi, Gi, Ti, k, M, G or T, e.g. 4Gi");
  auto typo = load_config_string("burst: {reclam: kill}\n", "c.yaml");
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().message,
            "c.yaml:1: burst.reclam: unknown key (accepted under burst: reclaim, context-allowance, cuda-library)");
  auto amount = load_config_string("burst: {context-allowance: lots}\n", "c.yaml");
  ASSERT_FALSE(amount);
  EXPECT_EQ(amount.error().message,
            "c.yaml:1: burst.context-allowance: \"lots\" is not a memory quantity; use an integer of MiB or a number "
            "with suffix Ki, Mi, Gi, Ti, k, M, G or T, e.g. 4Gi");
}

}  // namespace
}  // namespace gpufrac
