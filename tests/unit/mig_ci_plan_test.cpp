// The dynamic MIG planner with compute instances (core/mig/mig_plan.hpp, core/mig/mig_fit.hpp): compute
// picks the profile together with memory, compute instances share their GPU instance's memory,
// reuse and lazy destruction per GPU instance, compute instances gpufrac did not make are never
// destroyed, one compute instance per container per GPU instance, unknown compute instance tables.
#include <gtest/gtest.h>

#include "core/mig/mig_plan.hpp"
#include "mig_sim.hpp"

namespace gpufrac {
namespace {

using test::memory_request;
using test::profile_request;
using test::sim_gpu;
using test::SimGpu;
using test::with_compute;

Request ci_request(const std::string& profile, std::uint64_t memory = 0) {
  Request r = profile_request(profile);
  r.memory_bytes = memory;
  return r;
}

TEST(MigCiPlan, ComputeAndMemoryPickTheProfileTogether) {
  SimGpu h100(sim_gpu("h100-80gb-mig-empty.yaml"));
  auto plan = plan_mig(memory_request(4 * kGiB), {h100.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.device_profile, "1g.10gb");  // memory alone
  // 40 % of the 7g's 132 SMs is 53 SMs: 1g (16), 1g.20gb (26), 2g (32) fall short, 3g.40gb has 60.
  plan = plan_mig(with_compute(memory_request(4 * kGiB), 40), {h100.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.device_profile, "3g.40gb");
  EXPECT_EQ(plan->create.placement, (MigPlacement{4, 4}));
  EXPECT_EQ(plan->bytes, 40448 * kMiB);  // a whole GPU instance books its memory
  EXPECT_EQ(plan->reason, "dynamic MIG: new 3g.40gb@4 on GPU 0 (4 usable memory slices left)");
  // 13 % needs 18 SMs: the 1g.20gb (26), not the 1g.10gb (16).
  EXPECT_EQ(plan_mig(with_compute(memory_request(4 * kGiB), 13), {h100.view()})->create.device_profile, "1g.20gb");
  // On an A100 40 % of 98 SMs is 40 SMs: 3 slices (42).
  SimGpu a100(sim_gpu("a100-40gb-mig-empty.yaml"));
  EXPECT_EQ(plan_mig(with_compute(memory_request(4 * kGiB), 40), {a100.view()})->create.device_profile, "3g.20gb");
  // Memory still counts: 40 % with 25 GiB needs the 7g.40gb (the 4g.20gb has 56 SMs but 19.5 GiB).
  EXPECT_EQ(plan_mig(with_compute(memory_request(25 * kGiB), 40), {a100.view()})->create.device_profile, "7g.40gb");
  EXPECT_EQ(plan_mig(with_compute(memory_request(4 * kGiB), 100), {a100.view()})->create.device_profile, "7g.40gb");
}

TEST(MigCiPlan, ThreeComputeInstancesShareOneGpuInstance) {
  SimGpu s(sim_gpu("h100-80gb-mig-empty.yaml"));
  s.book(s.add("4g.40gb", 0), "big", 40448 * kMiB);
  std::vector<std::string> uuids;
  for (int i = 0; i < 3; ++i) {
    auto plan = plan_mig(ci_request("1c.3g.40gb"), {s.view()});
    ASSERT_TRUE(plan) << i << ": " << plan.error().message;
    EXPECT_EQ(plan->bytes, 13482 * kMiB);  // the equal split: 40448 MiB x 1 / 3
    EXPECT_EQ(plan->create.device_profile, "1c.3g.40gb");
    uuids.push_back(s.apply(*plan, text::cat("c", i)));
    if (i == 0) {
      EXPECT_FALSE(plan->create.gi.has_value());
      EXPECT_EQ(plan->create.ci_start, 2u);  // keeps 2c.3g (placement 0) possible
      EXPECT_EQ(plan->reason, "dynamic MIG: new 1c.3g.40gb in a new 3g.40gb@4 on GPU 0 (0 usable memory slices left)");
    } else {
      EXPECT_EQ(plan->create.gi, 2u);
    }
  }
  EXPECT_EQ(s.layout(), "4g.40gb@0 1c.3g.40gb@4:0 1c.3g.40gb@4:1 1c.3g.40gb@4:2");
  auto fourth = plan_mig(ci_request("1c.3g.40gb"), {s.view()});
  ASSERT_FALSE(fourth);
  EXPECT_EQ(fourth.error().message,
            "no MIG instance for mig-profile=1c.3g.40gb fits on a dynamic MIG GPU, even after destroying idle ones: "
            "GPU 0: 4g.40gb@0 (big), 1c.3g.40gb@4 (c0), 1c.3g.40gb@4 (c1), 1c.3g.40gb@4 (c2)");
  // Released, a compute instance is idle and reused; its GPU instance stays while one is booked.
  s.release(uuids[1], 100);
  auto again = plan_mig(ci_request("1c.3g.40gb"), {s.view()});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->reuse_uuid, uuids[1]);
  EXPECT_EQ(again->reason, "dynamic MIG: idle 1c.3g.40gb on GPU 0 gi 2 ci 1 reused");
  EXPECT_FALSE(plan_mig(profile_request("3g.40gb"), {s.view()}));  // c0 and c2 keep the GPU instance
  s.release(uuids[0], 100);
  s.release(uuids[2], 100);
  auto whole = plan_mig(profile_request("3g.40gb"), {s.view()});
  ASSERT_TRUE(whole) << whole.error().message;
  ASSERT_EQ(whole->destroy.size(), 1u);  // the split GPU instance goes whole, gpufrac made all three
  EXPECT_EQ(whole->destroy[0].uuids.size(), 3u);
}

TEST(MigCiPlan, MemoryOfAGpuInstanceIsNeverBookedTwice) {
  SimGpu s(sim_gpu("a100-40gb-mig-empty.yaml"));
  auto big = plan_mig(ci_request("1c.3g.20gb", 15 * kGiB), {s.view()});
  ASSERT_TRUE(big) << big.error().message;
  EXPECT_EQ(big->bytes, 15 * kGiB);
  s.apply(*big, "big");
  // 19968 MiB - 15 GiB = 4608 MiB left: the equal split (6656 MiB) goes to a new GPU instance,
  // 4 GiB fits beside.
  auto split = plan_mig(ci_request("1c.3g.20gb"), {s.view()});
  ASSERT_TRUE(split) << split.error().message;
  EXPECT_FALSE(split->create.gi.has_value());
  EXPECT_EQ(split->bytes, 6656 * kMiB);
  auto beside = plan_mig(ci_request("1c.3g.20gb", 4 * kGiB), {s.view()});
  ASSERT_TRUE(beside) << beside.error().message;
  EXPECT_EQ(beside->create.gi, 1u);
  EXPECT_FALSE(plan_mig(ci_request("1c.3g.20gb", 20 * kGiB), {s.view()}));  // more than a 3g.20gb has
}

TEST(MigCiPlan, SharesTakeComputeInstancesOnlyWhereTheyExist) {
  SimGpu s(sim_gpu("a100-40gb-mig-empty.yaml"));
  // 10 % with 4 GiB: 10 SMs; the smallest whole GPU instance with them is a 1g.5gb.
  auto plan = plan_mig(with_compute(memory_request(4 * kGiB), 10), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.device_profile, "1g.5gb");
  // With every 1g placement but one taken and a split 7g gone, a 3g split by an explicit request
  // has room: 10 % with 4 GiB takes 1c.3g.20gb there (14 SMs, 4 GiB of its memory) before a 2g.
  s.book(s.add_ci("3g.20gb", 4, 1, 2), "x", 6656 * kMiB);
  s.made.push_back(s.gpu.mig_instances.back().uuid);
  for (std::uint32_t i = 0; i < 3; ++i) s.book(s.add("1g.5gb", i), text::cat("one", i), 4864 * kMiB);
  plan = plan_mig(with_compute(memory_request(4 * kGiB), 10), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.device_profile, "1g.5gb");  // slice 3 is still free: the smaller profile first
  s.book(s.add("1g.5gb", 3), "one3", 4864 * kMiB);
  plan = plan_mig(with_compute(memory_request(4 * kGiB), 10), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.device_profile, "1c.3g.20gb");
  EXPECT_EQ(plan->create.gi, 1u);
  EXPECT_EQ(plan->bytes, 4 * kGiB);
  // 25 % needs 25 SMs: 2c.3g.20gb (28) fits beside the 1c (compute slices 0-1), before a new 3g.
  plan = plan_mig(with_compute(memory_request(4 * kGiB), 25), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.device_profile, "2c.3g.20gb");
  EXPECT_EQ(plan->create.ci_start, 0u);
}

TEST(MigCiPlan, ComputeInstancesFoundOnTheNodeAreNeverDestroyed) {
  // a100-40gb-mig-ci: both 3g.20gb split by mig-parted (not made by gpufrac), all idle.
  SimGpu s(sim_gpu("a100-40gb-mig-ci.yaml"));
  for (const auto& m : s.gpu.mig_instances) s.idle.push_back(MigIdleRecord{m.uuid, s.gpu.uuid, 0});
  auto whole = plan_mig(profile_request("7g.40gb"), {s.view()});
  ASSERT_FALSE(whole);
  EXPECT_EQ(whole.error().message,
            "no MIG instance for mig-profile=7g.40gb fits on a dynamic MIG GPU, even after destroying idle ones: "
            "GPU 0: 1c.3g.20gb@4 (idle), 1c.3g.20gb@4 (idle), 1c.3g.20gb@4 (idle), 2c.3g.20gb@0 (idle), "
            "1c.3g.20gb@0 (idle)");
  auto one = plan_mig(ci_request("1c.3g.20gb"), {s.view()});
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->reuse_uuid, "MIG-1a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c01");  // the lowest GI, then CI
  auto two = plan_mig(with_compute(memory_request(4 * kGiB), 20), {s.view()});
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(two->reuse_uuid, "MIG-4a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c04");  // 2c.3g.20gb: 28 SMs for 20 SMs
  EXPECT_EQ(two->bytes, 4 * kGiB);
}

TEST(MigCiPlan, OneComputeInstancePerGpuInstancePerContainer) {
  SimGpu s(sim_gpu("h100-80gb-mig-empty.yaml"));
  s.book(s.add("4g.40gb", 0), "big", 40448 * kMiB);
  s.apply(*plan_mig(ci_request("1c.3g.40gb"), {s.view()}), "mine");
  const MigHolder me{"mine", ""};
  auto plan = plan_mig(ci_request("1c.3g.40gb"), {mig_view(s.gpu, s.live, s.idle, {}, s.made, me)});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message,
            "no MIG instance for mig-profile=1c.3g.40gb fits on a dynamic MIG GPU, even after destroying idle ones: "
            "GPU 0: 4g.40gb@0 (big), 1c.3g.40gb@4 (mine); a container gets one compute instance per GPU instance");
  EXPECT_TRUE(plan_mig(ci_request("1c.3g.40gb"), {s.view()}));  // another container: beside it
}

TEST(MigCiPlan, UnknownComputeInstanceTables) {
  // A node where NVML never answered for a 3g.40gb: its compute instance profiles are unknown.
  Gpu g = sim_gpu("h100-80gb-mig-empty.yaml");
  for (auto& p : g.mig_profiles) p.compute_profiles.clear();
  SimGpu s(g);
  auto plan = plan_mig(ci_request("1c.3g.40gb"), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.ci_slices, 1u);
  EXPECT_FALSE(plan->create.ci_profile_id.has_value());  // NVML's table decides once the GI exists
  EXPECT_FALSE(plan->create.ci_start.has_value());
  // Compute requests see whole GPU instances, whose SMs NVML always reports.
  EXPECT_EQ(plan_mig(with_compute(memory_request(4 * kGiB), 40), {s.view()})->create.device_profile, "3g.40gb");
  EXPECT_EQ(plan_mig(ci_request("3c.4g.40gb"), {s.view()}).error().message,  // 2 x 3 > 4 + 1: not offered
            "no dynamic MIG GPU offers profile 3c.4g.40gb; gpufrac info lists each GPU's profiles");
}

}  // namespace
}  // namespace gpufrac
