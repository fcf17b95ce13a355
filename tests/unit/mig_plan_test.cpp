// The dynamic MIG planner (core/mig/mig_plan.hpp) on simulated GPUs: the MIG user guide's ordering
// example, candidate profiles, usable slices, reuse, destroying the fewest idle instances and
// falling back to larger profiles.
#include <gtest/gtest.h>

#include "core/mig/mig_plan.hpp"
#include "mig_sim.hpp"

namespace gpufrac {
namespace {

using test::fraction_request;
using test::memory_request;
using test::profile_request;
using test::sim_gpu;
using test::SimGpu;

// Plans and applies each request in turn; returns the layout, or the first refusal.
std::string run(SimGpu& s, const std::vector<std::string>& profiles) {
  int n = 0;
  for (const auto& p : profiles) {
    auto plan = plan_mig(profile_request(p), {s.view()});
    if (!plan) return "refused " + p + ": " + plan.error().message;
    s.apply(*plan, text::cat("c", ++n));
  }
  return s.layout();
}

TEST(MigPlan, GuideOrderThatFailsNaivelySucceeds) {
  // nvidia-smi mig -cgi 19,19,14,9 fails on an A100-40GB: the driver's own placements strand 3g.20gb.
  SimGpu s(sim_gpu("a100-40gb-mig-empty.yaml"));
  EXPECT_EQ(run(s, {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"}), "1g.5gb@0 1g.5gb@1 2g.10gb@2 3g.20gb@4");
}

TEST(MigPlan, GuideOrderWithThreeGFirstSucceeds) {
  SimGpu s(sim_gpu("a100-40gb-mig-empty.yaml"));
  EXPECT_EQ(run(s, {"3g.20gb", "1g.5gb", "2g.10gb", "1g.5gb"}), "1g.5gb@0 1g.5gb@1 2g.10gb@2 3g.20gb@4");
}

TEST(MigPlan, FourSliceProfilesStartHighOthersLow) {
  SimGpu s(sim_gpu("h100-80gb-mig-empty.yaml"));
  auto plan = plan_mig(profile_request("3g.40gb"), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.placement, (MigPlacement{4, 4}));
  EXPECT_EQ(plan->reason, "dynamic MIG: new 3g.40gb@4 on GPU 0 (4 usable memory slices left)");
  plan = plan_mig(profile_request("2g.20gb"), {s.view()});
  EXPECT_EQ(plan->create.placement, (MigPlacement{0, 2}));
}

TEST(MigPlan, SliceSevenIsUsableOnlyThroughWidePlacements) {
  const Gpu g = sim_gpu("h100-80gb-mig-empty.yaml");
  EXPECT_EQ(usable_free_slices(g, {}), 8u);
  EXPECT_EQ(usable_free_slices(g, {{6, 1}}), 6u);  // slice 7: only 1g.20gb@6, 3g@4, 7g@0 reach it
  EXPECT_EQ(usable_free_slices(g, {{5, 1}}), 7u);
  EXPECT_EQ(usable_free_slices(g, {{0, 4}, {4, 2}, {6, 1}}), 0u);
  // 1g.10gb never goes to slice 6 while another slice keeps slice 7 usable.
  SimGpu s(g);
  EXPECT_EQ(run(s, {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}),
            "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 1g.10gb@6");
}

TEST(MigPlan, CandidateProfilesBySlicesOrMemoryPlainFirst) {
  const Gpu g = sim_gpu("h100-80gb-mig-empty.yaml");
  auto names = [&](const Request& r) {
    std::vector<std::string> out;
    for (const MigProfile* p : mig_candidate_profiles(r, g)) out.push_back(p->name);
    return text::join(out, " ");
  };
  EXPECT_EQ(names(fraction_request(100000)), "1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb 1g.10gb+me");
  EXPECT_EQ(names(fraction_request(250000)), "1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb");  // 2 of 8 slices
  EXPECT_EQ(names(fraction_request(260000)), "3g.40gb 4g.40gb 7g.80gb");                  // 3 of 8: 4 slices
  EXPECT_EQ(names(fraction_request(kWholeGpuPpm)), "7g.80gb");
  EXPECT_EQ(names(memory_request(10 * kGiB)), "1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb");  // 9984 MiB < 10 GiB
  EXPECT_EQ(names(memory_request(9984 * kMiB)), "1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb 1g.10gb+me");
  EXPECT_EQ(names(memory_request(80 * kGiB)), "");
  EXPECT_EQ(names(profile_request("1g.10gb+me")), "1g.10gb+me");
  EXPECT_EQ(names(profile_request("3c.3g.40gb")), "3g.40gb");
}

TEST(MigPlan, SharesTakeTheSmallestProfile) {
  SimGpu s(sim_gpu("h100-80gb-mig-empty.yaml"));
  auto plan = plan_mig(fraction_request(250000), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.profile_name, "1g.20gb");
  plan = plan_mig(memory_request(30 * kGiB), {s.view()});
  EXPECT_EQ(plan->create.profile_name, "3g.40gb");
  EXPECT_EQ(plan->create.placement.start, 4u);
}

TEST(MigPlan, ReusesARecordedIdleInstanceFirst) {
  SimGpu s(sim_gpu("h100-80gb-mig-empty.yaml"));
  const std::string a = s.add("1g.10gb", 3), b = s.add("1g.10gb", 0);
  s.book(a, "x");
  s.release(a, 100);
  auto plan = plan_mig(profile_request("1g.10gb"), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->reuse_uuid, a);  // b has no record (not known idle): it may be destroyed, not handed out
  EXPECT_EQ(plan->reason, "dynamic MIG: idle 1g.10gb on GPU 0 gi 1 reused");
  s.book(a, "y");
  plan = plan_mig(profile_request("1g.10gb"), {s.view()});
  EXPECT_FALSE(plan->reuse());
  EXPECT_EQ(plan->create.placement.start, 1u);
}

TEST(MigPlan, DestroysTheFewestIdleInstances) {
  SimGpu s(sim_gpu("h100-80gb-mig-empty.yaml"));
  std::vector<std::string> all;
  for (std::uint32_t i = 0; i < 7; ++i) all.push_back(s.add("1g.10gb", i));
  for (const auto& u : all) {
    s.book(u, "c");
    s.release(u, 0);
  }
  s.book(all[1], "busy");
  // 3g.40gb@0 needs 0-3 (4 instances, one busy); @4 needs 4-6 (3 idle instances).
  auto plan = plan_mig(profile_request("3g.40gb"), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.placement.start, 4u);
  ASSERT_EQ(plan->destroy.size(), 3u);
  EXPECT_EQ(plan->destroy[0].placement.start, 4u);
  EXPECT_EQ(plan->destroy[2].placement.start, 6u);
  EXPECT_EQ(plan->reason,
            "dynamic MIG: new 3g.40gb@4 on GPU 0 after destroying idle 1g.10gb@4, 1g.10gb@5, 1g.10gb@6 "
            "(0 usable memory slices left)");
}

TEST(MigPlan, BusyInstancesAreNeverDestroyed) {
  SimGpu s(sim_gpu("h100-80gb-mig-empty.yaml"));
  s.book(s.add("1g.10gb", 1), "one");
  s.book(s.add("1g.10gb", 5), "two");
  auto plan = plan_mig(profile_request("3g.40gb"), {s.view()});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().kind, ErrorKind::user);
  EXPECT_EQ(plan.error().message,
            "no MIG instance for mig-profile=3g.40gb fits on a dynamic MIG GPU, even after destroying idle ones: "
            "GPU 0: 1g.10gb@1 (one), 1g.10gb@5 (two)");
  auto unknown = plan_mig(profile_request("1g.5gb"), {s.view()});
  EXPECT_EQ(unknown.error().message,
            "no dynamic MIG GPU offers profile 1g.5gb; gpufrac info lists each GPU's profiles");
  EXPECT_EQ(plan_mig(memory_request(100 * kGiB), {s.view()}).error().message,
            "no MIG profile of a dynamic MIG GPU holds memory=100Gi");
}

TEST(MigPlan, ForeignGpuInstancesBlockTheirSlices) {
  const Gpu g = sim_gpu("h100-80gb-mig-empty.yaml");
  MigGpuView view = mig_view(g, {}, {}, {MigForeign{3, 9, {4, 4}}});
  ASSERT_EQ(view.occupants.size(), 1u);
  EXPECT_EQ(view.occupants[0].state, OccupantState::blocked);
  auto plan = plan_mig(profile_request("3g.40gb"), {view});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.placement.start, 0u);
}

// A GPU where the smallest profile has one placement and a max count of one.
Gpu tiny_gpu() {
  auto m = load_simulated_machine_string(R"(
description: "test"
driver-version: "550.54.15"
profile-sets:
  t:
    - {index: 0, id: 19, name: 1g.10gb, compute-slices: 1, memory-slices: 1, memory-mib: 9984, max: 1, placements: [0], multiprocessors: 16, copy-engines: 1, decoders: 1, encoders: 0, jpegs: 1, ofas: 0}
    - {index: 1, id: 14, name: 2g.20gb, compute-slices: 2, memory-slices: 2, memory-mib: 20096, max: 3, placements: [0, 2, 4], multiprocessors: 32, copy-engines: 2, decoders: 2, encoders: 0, jpegs: 2, ofas: 0}
    - {index: 4, id: 0, name: 7g.80gb, compute-slices: 7, memory-slices: 8, memory-mib: 81152, max: 1, placements: [0], multiprocessors: 132, copy-engines: 8, decoders: 7, encoders: 0, jpegs: 7, ofas: 1}
gpus:
  - {name: NVIDIA H100 80GB HBM3, uuid: GPU-17dcd676-8cf2-b786-263d-46a0f84a6d8d, pci-bus-id: "00000000:19:00.0", memory-mib: 81559, compute-capability: "9.0", mig: {enabled: true, profiles: t}}
)",
                                         "tiny.yaml");
  EXPECT_TRUE(m) << m.error().message;
  return m->inventory.gpus.at(0);
}

TEST(MigPlan, FallsBackToALargerProfileOnlyWhenTheSmallerCannotBePlaced) {
  SimGpu s(tiny_gpu());
  s.book(s.add("1g.10gb", 0), "busy");
  auto plan = plan_mig(fraction_request(100000), {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(placement_text(plan->create.profile_name, plan->create.placement), "2g.20gb@2");
  s.live.clear();
  s.release(s.gpu.mig_instances[0].uuid, 0);
  plan = plan_mig(fraction_request(100000), {s.view()});
  EXPECT_EQ(plan->reuse_uuid, s.gpu.mig_instances[0].uuid);  // once idle, the smaller one is reused
}

TEST(MigPlan, PicksTheGpuByPlanThenIndex) {
  SimGpu a(sim_gpu("h100-80gb-mig-empty.yaml")), b(sim_gpu("h100-80gb-mig-empty.yaml"));
  b.gpu.index = 1;
  b.gpu.uuid = "GPU-22222222-2222-2222-2222-222222222222";
  a.book(a.add("1g.10gb", 2), "x");
  auto plan = plan_mig(profile_request("3g.40gb"), {a.view(), b.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  // 3g@4 costs 4 usable slices on either GPU: the fuller one takes it (GPU 1 stays whole).
  EXPECT_EQ(plan->gpu_index, 0u);
  a.book(a.add("1g.10gb", 5), "y");
  EXPECT_EQ(plan_mig(profile_request("3g.40gb"), {a.view(), b.view()})->gpu_index, 1u);
}

// A DRA profile device names its placement: the plan reuses or makes an instance only there, and
// refuses (naming the slice and what holds it) when that placement is taken.
TEST(MigPlan, APinnedPlacementIsTheOnlyOneTaken) {
  SimGpu s(sim_gpu("h100-80gb-mig-empty.yaml"));
  Request r = profile_request("1g.10gb");
  r.gpu = GpuPin{0, "", "", 5};
  auto plan = plan_mig(r, {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.placement, (MigPlacement{5, 1}));  // unpinned, the planner takes slice 0
  const std::string at0 = s.add("1g.10gb", 0), at5 = s.add("1g.10gb", 5);
  for (const auto& u : {at0, at5}) {
    s.book(u, "c");
    s.release(u, 0);
  }
  plan = plan_mig(r, {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->reuse_uuid, at5);  // the idle instance at slice 5, not the one at 0
  s.book(at5, "busy");
  plan = plan_mig(r, {s.view()});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message,
            "no MIG instance for mig-profile=1g.10gb at memory slice 5 fits on a dynamic MIG GPU, even after "
            "destroying idle ones: GPU 0: 1g.10gb@0 (idle), 1g.10gb@5 (busy)");
  r.gpu->mig_start = 4;  // 2g.20gb@4 would overlap the busy 1g@5; 1g@4 is free
  plan = plan_mig(r, {s.view()});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->create.placement, (MigPlacement{4, 1}));
  EXPECT_EQ(r.describe(), "mig-profile=1g.10gb gpu=0 placement=4");
}

}  // namespace
}  // namespace gpufrac
