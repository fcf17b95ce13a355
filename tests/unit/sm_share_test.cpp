// SM shares (docs/architecture.md "SM sharing"): the request (compute-mode sm and what it refuses),
// the allocator's mode separation and its one-line refusals, the config's compute: section, and what
// the planner gives an SM share's container.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/allocator/allocator.hpp"
#include "core/config/config.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_mps.hpp"
#include "core/request/env_request.hpp"
#include "request_fixture.hpp"
#include "shipped_machines.hpp"

namespace gpufrac {
namespace {

const std::string kGpu0 = "GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5";
const std::string kGpu1 = "GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c";

std::string parsed(const Annotations& a) {
  auto r = parse_request(a, true);
  if (!r) return "error: " + r.error().message;
  return *r ? (*r)->describe() : "-";
}

Annotations sm(const std::string& percent, Annotations more = {}) {
  more["gpufrac.io/compute"] = percent;
  more["gpufrac.io/compute-mode"] = "sm";
  return more;
}

TEST(SmRequest, ComputeModeSmIsAnSmShare) {
  auto r = parse_request(sm("30"), true);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->compute_mode, ComputeMode::sm);
  EXPECT_EQ((*r)->compute_ppm, 300'000u);
  EXPECT_EQ((*r)->fraction, 300'000u);  // compute alone is also the memory share
  EXPECT_EQ((*r)->describe(), "compute=30 compute-mode=sm");
  EXPECT_EQ(parsed(sm("30", {{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/gpu", "1"}})),
            "memory=4Gi compute=30 compute-mode=sm gpu=1");
  EXPECT_EQ(parsed(sm("70", {{"gpufrac.io/priority", "normal"}})), "compute=70 compute-mode=sm priority=normal");
}

TEST(SmRequest, BadInputIsOneLine) {
  const std::string needs =
      "error: gpufrac.io/compute-mode: sm needs gpufrac.io/compute, the percent of the GPU's SMs the container's "
      "kernels may use; add it, e.g. gpufrac.io/compute: \"30\"";
  EXPECT_EQ(parsed({{"gpufrac.io/compute-mode", "sm"}}), needs);
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute-mode", "sm"}}), needs);
  EXPECT_EQ(parsed(sm("30", {{"gpufrac.io/priority", "high"}})),
            "error: gpufrac.io/priority: high does not apply to gpufrac.io/compute-mode sm (MPS runs every client's "
            "kernels at once and cannot preempt one client for another); use normal or leave it out");
  EXPECT_EQ(parsed(sm("30", {{"gpufrac.io/mig-profile", "1g.10gb"}})),
            "error: gpufrac.io/compute: does not apply to gpufrac.io/mig-profile (a MIG instance owns its share of the "
            "GPU's time); use it with gpufrac.io/fraction or gpufrac.io/memory, or on its own");
  EXPECT_EQ(parsed(sm("30", {{"gpufrac.io/gpus", "2"}})),
            "error: gpufrac.io/gpus: does not apply to gpufrac.io/compute-mode sm (a process is the client of one "
            "GPU's MPS server); use one GPU per container");
  EXPECT_EQ(parsed({{"gpufrac.io/compute", "30"}, {"gpufrac.io/compute-mode", "SM"}}),
            "error: gpufrac.io/compute-mode: \"SM\" is not a compute mode; use fair, strict or sm");
  // The environment form names the variables.
  auto env = parse_container_request({}, {"GPUFRAC_FRACTION=0.5", "GPUFRAC_COMPUTE_MODE=sm"}, true);
  ASSERT_FALSE(env);
  EXPECT_EQ(env.error().message,
            "GPUFRAC_COMPUTE_MODE: sm needs GPUFRAC_COMPUTE, the percent of the GPU's SMs the container's kernels may "
            "use; add it, e.g. GPUFRAC_COMPUTE=30");
}

// An SM share or a time share booked on a GPU.
LedgerEntry on(const Inventory& inv, const std::string& id, std::uint32_t gpu, std::uint32_t ppm, bool sm_share) {
  LedgerEntry e;
  e.container_id = id;
  e.device_uuid = inv.gpus.at(gpu).uuid;
  e.gpu_uuid = e.device_uuid;
  e.gpu_index = gpu;
  e.bytes = 4 * kGiB;
  e.compute_ppm = ppm;
  e.compute_mode = sm_share ? ComputeMode::sm : ComputeMode::fair;
  return e;
}

struct Alloc {
  Inventory inv = test::shipped_machine("a100-40gb-x2.yaml", true);
  std::vector<LedgerEntry> live;
  std::vector<MpsGpuRecord> mps;
  AllocationConfig cfg;
  Result<Grant> operator()(const Annotations& a) {
    return allocate(testing::parsed_request(a), inv, live, cfg, {}, {}, mps);
  }
  std::string refusal(const Annotations& a) {
    auto g = (*this)(a);
    EXPECT_FALSE(g) << g->reason;
    return g ? "" : g.error().message;
  }
};

TEST(SmAlloc, AnEmptyGpuSwitchesAndAGpuInMpsModeComesFirst) {
  Alloc a;
  auto g = a(sm("30"));
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->gpu_index, 0u);
  EXPECT_EQ(g->compute_mode, ComputeMode::sm);
  EXPECT_EQ(g->compute_ppm, 300'000u);
  EXPECT_EQ(g->reason, "sm: GPU 0 is empty and switches to SM mode (MPS)");
  // GPU 1 in MPS mode (a record, no share yet) is taken before the empty GPU 0, whatever the policy.
  a.mps = {{kGpu1, 1}};
  a.cfg.policy = Policy::spread;
  g = a(sm("30"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->gpu_index, 1u);
  EXPECT_EQ(g->reason, "sm: GPU 1 is in SM mode with 100 % of its SMs free before");
}

TEST(SmAlloc, ModesNeverShareAGpu) {
  Alloc a;
  a.live = {on(a.inv, "t", 0, 250'000, false), on(a.inv, "s", 1, 700'000, true)};
  // The SM share fits only GPU 1's 30 %; a time share only GPU 0.
  EXPECT_EQ(a(sm("30"))->gpu_index, 1u);
  EXPECT_EQ(a.refusal(sm("40")),
            "no GPU can take compute=40 compute-mode=sm: GPU 0 is time-sliced (1 share), GPU 1 is in SM mode with 30 % "
            "of its SMs free");
  EXPECT_EQ(a({{"gpufrac.io/fraction", "0.25"}})->gpu_index, 0u);
  EXPECT_EQ(a.refusal({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/gpu", "1"}}),
            "no GPU can take fraction=0.25: GPU 1 is in SM mode (MPS, 1 SM share) (pinned by gpufrac.io/gpu)");
  // A whole GPU never goes on a GPU in MPS mode either, not even an idle one.
  a.live = {};
  a.mps = {{kGpu0, 1}, {kGpu1, 1}};
  EXPECT_EQ(a.refusal({{"gpufrac.io/fraction", "1"}}),
            "no GPU is free for a whole GPU: GPU 0 is in SM mode (MPS, no SM share yet), GPU 1 is in SM mode (MPS, no "
            "SM share yet)");
}

TEST(SmAlloc, SmSharingConfigAndOldGpus) {
  Alloc a;
  a.cfg.sm_sharing.mode = SmSharing::off;
  EXPECT_EQ(a.refusal(sm("30")),
            "no GPU can take compute=30 compute-mode=sm: GPU 0 may not switch to SM mode (compute.sm-sharing: off), "
            "GPU 1 may not switch to SM mode (compute.sm-sharing: off)");
  a.cfg.sm_sharing = {SmSharing::listed, {kGpu1}};
  EXPECT_EQ(a(sm("30"))->gpu_index, 1u);
  a.cfg.sm_sharing = {SmSharing::listed, {"1"}};
  EXPECT_EQ(a(sm("30"))->gpu_index, 1u);
  a.cfg.sm_sharing = {};
  a.inv.gpus[0].cc_major = 6;
  a.inv.gpus[1].cc_major = 6;
  EXPECT_EQ(a.refusal(sm("30", {{"gpufrac.io/gpu", "0"}})),
            "no GPU can take compute=30 compute-mode=sm gpu=0: GPU 0 (compute capability 6.0) cannot cap SMs per MPS "
            "client (Volta or newer) (pinned by gpufrac.io/gpu)");
}

TEST(SmAlloc, TheSmsOfAGpuNeverPass100) {
  Alloc a;
  a.live = {on(a.inv, "s1", 0, 600'000, true)};
  a.mps = {{kGpu0, 1}};
  EXPECT_EQ(a(sm("40"))->gpu_index, 0u);
  a.live.push_back(on(a.inv, "s2", 0, 400'000, true));
  EXPECT_EQ(a(sm("10"))->gpu_index, 1u);  // GPU 0 is full: the empty GPU 1 switches
  a.live.push_back(on(a.inv, "t", 1, 100'000, false));
  EXPECT_EQ(a.refusal(sm("10")),
            "no GPU can take compute=10 compute-mode=sm: GPU 0 is in SM mode with 0 % of its SMs free, GPU 1 is "
            "time-sliced (1 share)");
}

TEST(SmConfig, TheComputeSection) {
  auto c = load_config_string("compute: {sm-sharing: off, mps-idle-timeout: 30}\n", "cfg.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->allocation.sm_sharing.mode, SmSharing::off);
  EXPECT_EQ(c->allocation.sm_sharing.idle_timeout_s, 30u);
  c = load_config_string("compute:\n  sm-sharing: [0, GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c]\n", "cfg.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->allocation.sm_sharing.may_switch(0, kGpu0));
  EXPECT_TRUE(c->allocation.sm_sharing.may_switch(1, kGpu1));
  EXPECT_FALSE(c->allocation.sm_sharing.may_switch(2, "GPU-other"));
  EXPECT_EQ(default_config().allocation.sm_sharing.mode, SmSharing::on_demand);
  EXPECT_EQ(default_config().allocation.sm_sharing.idle_timeout_s, 600u);
  auto bad = load_config_string("compute: {sm-sharing: always}\n", "cfg.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "cfg.yaml:1: compute.sm-sharing: must be off, on-demand or a list of GPUs (indices or GPU-<uuid>), e.g. "
            "[0, 1]");
  bad = load_config_string("compute:\n  sm-sharing: [0, gpu1]\n", "cfg.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "cfg.yaml:2: compute.sm-sharing[1]: is not a GPU; use off, on-demand or a list of GPUs (indices or "
            "GPU-<uuid>), e.g. [0, 1]");
  bad = load_config_string("cdi: {sm-shares: [30, 0]}\n", "cfg.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "cfg.yaml:1: cdi.sm-shares[1]: is not a percent of the SMs; use an integer 1 to 100, e.g. 30");
}

TEST(SmPlan, TheContainerGetsThePipeTheShmAndTheClientVariables) {
  Config cfg = default_config();
  cfg.state_dir = "/run/g";
  Grant g{kGpu0, 0, kGpu0, std::nullopt, 12160 * kMiB, false, "", 300'000, ComputeMode::sm};
  EXPECT_EQ(plan_mps_env({g}), (std::vector<std::string>{"CUDA_MPS_PIPE_DIRECTORY=/run/gpufrac/mps/pipe",
                                                         "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30",
                                                         "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + kGpu0 + "=12160M"}));
  const auto mounts = plan_mps_mounts({g}, cfg);
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(
      mounts[0],
      (EditMount{
          "/run/g/mps/" + kGpu0 + "/pipe", "/run/gpufrac/mps/pipe", "bind", {"nosuid", "nodev", "noexec", "bind"}}));
  EXPECT_EQ(mounts[1],
            (EditMount{"/run/g/mps/" + kGpu0 + "/shm", "/dev/shm", "bind", {"nosuid", "nodev", "noexec", "bind"}}));
  // gpufrac's directory (mounted by gpufrac-hook in every front-end) carries both; no arbiter.
  const auto dir = plan_gpufrac_dir(cfg, container_files(cfg, "c"), {g});
  EXPECT_NE(std::find(dir.begin(), dir.end(), mounts[1]), dir.end());
  EXPECT_TRUE(plan_compute_mounts({g}, cfg, "k").empty());
  // A time share gets none of it.
  g.compute_mode = ComputeMode::fair;
  EXPECT_TRUE(plan_mps_env({g}).empty());
  EXPECT_TRUE(plan_mps_mounts({g}, cfg).empty());
}

}  // namespace
}  // namespace gpufrac
