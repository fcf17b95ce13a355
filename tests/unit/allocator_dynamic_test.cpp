// The allocator on dynamic-MIG GPUs: static GPUs' idle instances first, the planner's reuse as a
// grant, anything else a refusal naming what the provisioner would make; and the pieces the static
// front-ends use to run the provisioner (exec/mig_exec.hpp).
#include <gtest/gtest.h>

#include "core/allocator/allocator.hpp"
#include "exec/mig_exec.hpp"
#include "mig_sim.hpp"

namespace gpufrac {
namespace {

Inventory dgx() {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/dgx-8gpu-mixed.yaml");
  EXPECT_TRUE(m) << m.error().message;
  for (auto& g : m->inventory.gpus)
    for (auto& i : g.mig_instances) i.cap_nodes = {DeviceNodeInfo{"/dev/nvidia-caps/nvidia-cap30", 509, 30}};
  return m->inventory;
}

LedgerEntry on(const MigInstance& m, const std::string& id) {
  LedgerEntry e;
  e.container_id = id;
  e.device_uuid = m.uuid;
  e.pid = 1;
  return e;
}

TEST(AllocatorDynamic, StaticInstancesFirstThenThePlanner) {
  const Inventory inv = dgx();
  MigConfig mig;
  mig.gpus["7"] = MigMode::dynamic;
  std::vector<MigIdleRecord> idle;
  const DynamicMig dyn{&mig, &idle};
  auto g = allocate(test::profile_request("3g.40gb"), inv, {}, AllocationConfig{}, dyn);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->gpu_index, 4u);
  std::vector<LedgerEntry> live;
  for (const auto& gpu : inv.gpus)
    for (const auto& m : gpu.mig_instances)
      if (m.profile_name == "3g.40gb") live.push_back(on(m, "busy" + m.uuid.substr(4, 4)));
  g = allocate(test::profile_request("3g.40gb"), inv, live, AllocationConfig{}, dyn);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().kind, ErrorKind::user);
  EXPECT_TRUE(g.error().message.ends_with(
      "; no idle MIG instance serves mig-profile=3g.40gb on GPU 7; dynamic MIG provisioning (gpufrac mig provision) "
      "would make 3g.40gb@4"))
      << g.error().message;
  EXPECT_TRUE(g.error().message.starts_with("no idle MIG instance of profile 3g.40gb: GPU 4 gi 1 ci 0 in use by"))
      << g.error().message;
}

// gpufrac.io/gpu naming a dynamic GPU leaves no static GPU to look at: the planner alone answers
// (this once read the first element of an empty list).
TEST(AllocatorDynamic, APinToADynamicGpuGoesToThePlanner) {
  const Inventory inv = dgx();
  MigConfig mig;
  mig.gpus["7"] = MigMode::dynamic;
  std::vector<MigIdleRecord> idle;
  Request r = test::profile_request("1g.10gb");
  r.gpu = GpuPin{7, "", ""};
  auto g = allocate(r, inv, {}, AllocationConfig{}, DynamicMig{&mig, &idle});
  ASSERT_FALSE(g);
  EXPECT_TRUE(
      g.error().message.starts_with("no idle MIG instance serves mig-profile=1g.10gb on GPU 7; dynamic MIG "
                                    "provisioning (gpufrac mig provision) would make 1g.10gb@"))
      << g.error().message;
}

TEST(AllocatorDynamic, WithoutTheConfigEveryGpuIsStatic) {
  const Inventory inv = dgx();
  auto g = allocate(test::profile_request("7g.80gb"), inv, {}, AllocationConfig{});
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message.substr(0, 46), "no MIG instance of profile 7g.80gb exists; GPU");
}

TEST(AllocatorDynamic, ReuseIsAGrant) {
  test::SimGpu s(test::sim_gpu("h100-80gb-mig-empty.yaml"));
  const std::string u = s.add("2g.20gb", 2);
  Inventory inv;
  inv.gpus.push_back(s.gpu);
  MigConfig mig;
  mig.mode = MigMode::dynamic;
  std::vector<MigIdleRecord> idle{{u, s.gpu.uuid, 5}};
  AllocationConfig cfg;
  cfg.mig_serves_fractions = true;
  auto g = allocate(test::fraction_request(250000), inv, {}, cfg, DynamicMig{&mig, &idle});
  ASSERT_FALSE(g);  // 0.25 = 2 slices: 1g.20gb comes before 2g.20gb, and it can be created
  EXPECT_TRUE(g.error().message.ends_with("would make 1g.20gb@0")) << g.error().message;
  g = allocate(test::profile_request("2g.20gb"), inv, {}, cfg, DynamicMig{&mig, &idle});
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->device_uuid, u);
  EXPECT_EQ(g->bytes, 20096 * kMiB);
  EXPECT_TRUE(g->exclusive);
  EXPECT_EQ(g->mig, (MigRef{1, 0, "2g.20gb"}));
}

TEST(AllocatorDynamic, CdiPinOnADynamicGpuNeedsAnIdleRecord) {
  test::SimGpu s(test::sim_gpu("h100-80gb-mig-empty.yaml"));
  const std::string u = s.add("1g.10gb", 3);
  Inventory inv;
  inv.gpus.push_back(s.gpu);
  MigConfig mig;
  mig.mode = MigMode::dynamic;
  Request r = test::profile_request("1g.10gb");
  r.gpu = GpuPin{0, "", u};
  std::vector<MigIdleRecord> idle;
  auto g = allocate(r, inv, {}, AllocationConfig{}, DynamicMig{&mig, &idle});
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message, "MIG instance " + u +
                                   " on dynamic MIG GPU 0 is being created or destroyed; retry, or ask for "
                                   "mig-profile=1g.10gb");
  idle.push_back(MigIdleRecord{u, s.gpu.uuid, 1});
  g = allocate(r, inv, {}, AllocationConfig{}, DynamicMig{&mig, &idle});
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->device_uuid, u);
}

TEST(AllocatorDynamic, WhenTheProvisionerApplies) {
  const Inventory inv = dgx();
  MigConfig mig;
  mig.gpus[inv.gpus[7].uuid] = MigMode::dynamic;
  AllocationConfig alloc;
  EXPECT_TRUE(dynamic_mig_applies(test::profile_request("1g.10gb"), inv, alloc, mig));
  EXPECT_FALSE(dynamic_mig_applies(test::fraction_request(250000), inv, alloc, mig));  // mig-serves-fractions off
  alloc.mig_serves_fractions = true;
  EXPECT_TRUE(dynamic_mig_applies(test::fraction_request(250000), inv, alloc, mig));
  Request pinned = test::profile_request("1g.10gb");
  pinned.gpu = GpuPin{4, "", ""};
  EXPECT_FALSE(dynamic_mig_applies(pinned, inv, alloc, mig));  // GPU 4 is static
  EXPECT_FALSE(dynamic_mig_applies(test::profile_request("1g.10gb"), inv, alloc, MigConfig{}));
}

TEST(MigExec, ArgvAndCleanEnvironment) {
  Config cfg;
  cfg.cli_path = "/usr/bin/gpufrac";
  cfg.source = "/etc/gpufrac/config.yaml";
  ProvisionCall call{
      "c1", "", 4242, BookingSource::hook,
      request_annotations({{"gpufrac.io/mig-profile", "1g.10gb"}, {"other", "x"}, {"gpu-fraction", "1"}}, false)};
  EXPECT_EQ(text::join(provision_argv(cfg, call), " "),
            "/usr/bin/gpufrac mig provision --container c1 --device-key  --pid 4242 --source hook "
            "--annotation gpufrac.io/mig-profile=1g.10gb");
  EXPECT_EQ(request_annotations({{"gpu-fraction", "0.5"}, {"x", "y"}}, true), (Annotations{{"gpu-fraction", "0.5"}}));
  std::string a = "LD_PRELOAD=/evil.so", b = "GPUFRAC_FAKE_NVML_STATE=/tmp/s", c = "PATH=/tmp/evil";
  char* env[] = {a.data(), b.data(), c.data(), nullptr};
  EXPECT_EQ(text::join(provision_env(cfg, env), " "),
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GPUFRAC_CONFIG=/etc/gpufrac/config.yaml "
            "GPUFRAC_FAKE_NVML_STATE=/tmp/s");
  cfg.source = "<built-in defaults>";
  EXPECT_EQ(provision_env(cfg, nullptr).size(), 1u);
}

TEST(MigExec, TheChildsErrorLineAndStatusCarryOver) {
  Config cfg;
  cfg.cli_path = "/bin/sh";  // argv[1] = "mig": sh fails to open a script named mig, exit 127
  auto r = run_mig_provision(cfg, ProvisionCall{"c1"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::internal);
  EXPECT_TRUE(r.error().message.starts_with("/bin/sh: ")) << r.error().message;
  cfg.cli_path = "/nonexistent/gpufrac";
  r = run_mig_provision(cfg, ProvisionCall{"c1"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "cannot run /nonexistent/gpufrac (cli.path): No such file or directory");
}

}  // namespace
}  // namespace gpufrac
