// Who holds a share's memory limit (core/enforcement/enforcement.hpp) and where its cgroup is
// (core/enforcement/cgroup_v2.hpp, over the fixture trees of tests/fixtures/cgroup).
#include <gtest/gtest.h>

#include "core/enforcement/cgroup_v2.hpp"
#include "core/enforcement/enforcement.hpp"
#include "core/enforcement/nvidia_memory_env.hpp"
#include "core/text.hpp"
#include "exec/driver_limit_exec.hpp"
#include "nvml/simulated.hpp"
#include "shipped_machines.hpp"

namespace gpufrac {
namespace {

const std::string kFixtures = std::string(GPUFRAC_SOURCE_DIR) + "/tests/fixtures/cgroup";
const std::string kCgroup = "/sys/fs/cgroup/kubepods.slice/pod1.slice/cri-1.scope";

Inventory machine(const std::string& file) {
  return test::shipped_machine(file);
}

// The NVML backend (a simulated machine file has no driver to set limits).
Config nvml_config(Enforcement e) {
  Config c;
  c.nvml.backend = NvmlBackend::nvml;
  c.enforcement = e;
  return c;
}

LedgerEntry share(const Gpu& g, std::uint64_t bytes, const std::string& key = "") {
  LedgerEntry e;
  e.container_id = "c1";
  e.device_key = key;
  e.device_uuid = e.gpu_uuid = g.uuid;
  e.gpu_index = g.index;
  e.bytes = bytes;
  return e;
}

TEST(CgroupV2, LayoutsAndAProcessCgroupFromFixtureTrees) {
  EXPECT_EQ(detect_cgroup_layout(kFixtures + "/v2"), CgroupLayout::v2);
  EXPECT_EQ(detect_cgroup_layout(kFixtures + "/hybrid"), CgroupLayout::hybrid);
  EXPECT_EQ(detect_cgroup_layout(kFixtures + "/v1"), CgroupLayout::v1);
  EXPECT_EQ(detect_cgroup_layout(kFixtures + "/missing"), CgroupLayout::v1);
  const std::string proc = kFixtures + "/proc";
  EXPECT_EQ(*process_cgroup_dir(proc, "/sys/fs/cgroup", 4242), kCgroup);
  EXPECT_EQ(*process_cgroup_dir(proc, "/sys/fs/cgroup/", 4243), "/sys/fs/cgroup/x");
  EXPECT_EQ(process_cgroup_dir(proc, "/sys/fs/cgroup", 4244).error().message,
            proc +
                "/4244/cgroup: no cgroup v2 line (0::<path>); the container's process is not in the unified "
                "hierarchy");
  EXPECT_TRUE(process_cgroup_dir(proc, "/sys/fs/cgroup", 4245)
                  .error()
                  .message.starts_with(proc + "/4245/cgroup: cgroup path \"/sys/fs/cgroup/../../etc\" is not valid"));
  EXPECT_EQ(*parent_cgroup_dir(kCgroup, "/sys/fs/cgroup"), "/sys/fs/cgroup/kubepods.slice/pod1.slice");
  EXPECT_EQ(parent_cgroup_dir("/sys/fs/cgroup/x", "/sys/fs/cgroup").error().message,
            "cgroup \"/sys/fs/cgroup/x\" has no parent below /sys/fs/cgroup");
}

TEST(Enforcement, EachGpuSaysWhoHoldsItsSharesAndWhy) {
  const Inventory r615 = machine("h100-80gb-x3-r615.yaml"), r550 = machine("a100-40gb-x1.yaml");
  const Config cfg = nvml_config(Enforcement::auto_detect);
  auto how = [&](const Inventory& inv, std::size_t gpu, CgroupLayout l, const Config& c) {
    const GpuEnforcement e = gpu_enforcement(inv.gpus[gpu], inv, l, c);
    return std::string(to_string(e.holder)) + ": " + e.why;
  };
  EXPECT_EQ(how(r615, 0, CgroupLayout::v2, cfg), "driver: driver 615.20.03, cgroup v2, and the shim");
  EXPECT_EQ(how(r615, 2, CgroupLayout::v2, cfg), "mig: MIG mode: its instances are partitioned in hardware");
  EXPECT_EQ(how(r615, 0, CgroupLayout::hybrid, cfg),
            "shim: the node uses hybrid cgroup v1/v2; the driver limits cgroup v2 only");
  EXPECT_EQ(how(r615, 0, CgroupLayout::v1, cfg), "shim: the node uses cgroup v1; the driver limits cgroup v2 only");
  EXPECT_EQ(how(r550, 0, CgroupLayout::v2, cfg), "shim: driver 550.54.15 has no per-cgroup memory limits (r615+)");
  EXPECT_EQ(how(r550, 0, CgroupLayout::v2, nvml_config(Enforcement::driver)),
            "refused: driver 550.54.15 has no per-cgroup memory limits (r615+)");
  EXPECT_EQ(how(r615, 0, CgroupLayout::v2, nvml_config(Enforcement::shim)), "shim: enforcement: shim");
  Config simulated = cfg;
  simulated.nvml.backend = NvmlBackend::simulated;
  EXPECT_EQ(how(r615, 0, CgroupLayout::v2, simulated),
            "shim: the simulated backend has no driver to set limits (nvml.backend: nvml sets them)");
}

TEST(Enforcement, SharesGetHardTheirBytesAndSoftTheirGuaranteePerGpu) {
  const Inventory inv = machine("h100-80gb-x3-r615.yaml");
  Config cfg = nvml_config(Enforcement::auto_detect);
  LedgerEntry whole = share(inv.gpus[1], inv.gpus[1].memory_bytes, "whole");
  whole.exclusive = true;
  LedgerEntry mig = share(inv.gpus[2], 9984ull << 20, "mig");
  mig.mig = MigRef{7, 0, "1g.10gb"};
  mig.device_uuid = inv.gpus[2].mig_instances[0].uuid;
  auto plan =
      plan_driver_limits({share(inv.gpus[0], 20ull << 30, "a"), share(inv.gpus[1], 8ull << 30, "b"), whole, mig}, inv,
                         CgroupLayout::v2, cfg, kCgroup);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->size(), 2u) << "the whole GPU and the MIG instance get none";
  EXPECT_EQ((*plan)[0].limit, (DriverLimit{kCgroup, 20ull << 30, 20ull << 30}));
  EXPECT_EQ((*plan)[1].gpu_index, 1u);
  EXPECT_EQ((*plan)[1].limit, (DriverLimit{kCgroup, 8ull << 30, 8ull << 30}));
  cfg.allocation.overcommit = 2.0;  // guarantees never add up past the GPU's memory
  plan = plan_driver_limits({share(inv.gpus[0], 20ull << 30)}, inv, CgroupLayout::v2, cfg, kCgroup);
  EXPECT_EQ((*plan)[0].limit, (DriverLimit{kCgroup, 10ull << 30, 20ull << 30}));
  EXPECT_TRUE(plan_driver_limits({share(inv.gpus[0], 1)}, inv, CgroupLayout::hybrid, cfg, "")->empty());
}

TEST(Enforcement, DriverModeRefusesWhatTheDriverCannotHoldAndNodesWithoutItPayNothing) {
  const Inventory r615 = machine("h100-80gb-x3-r615.yaml"), r550 = machine("a100-40gb-x1.yaml");
  const Config driver = nvml_config(Enforcement::driver), automatic = nvml_config(Enforcement::auto_detect);
  auto r = plan_driver_limits({share(r615.gpus[0], 1)}, r615, CgroupLayout::hybrid, driver, "");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "enforcement: driver: GPU 0 cannot hold the share of c1 with the driver: the node uses hybrid cgroup "
            "v1/v2; the driver limits cgroup v2 only; set enforcement: auto to let the shim hold it on this node");
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  EXPECT_FALSE(driver_limits_considered(r550, automatic)) << "no GPU of an r550 node has the call: no helper";
  EXPECT_TRUE(driver_limits_considered(r550, driver)) << "driver mode must refuse there";
  EXPECT_TRUE(driver_limits_considered(r615, automatic));
  EXPECT_FALSE(driver_limits_considered(r615, nvml_config(Enforcement::shim)));
  Config v2 = automatic;
  v2.cgroup_root = kFixtures + "/v2";
  LedgerEntry set = share(r615.gpus[0], 1);
  EXPECT_TRUE(*driver_limits_wanted({set}, r615, v2));
  set.driver_limit = DriverLimit{kCgroup, 1, 1};
  EXPECT_FALSE(*driver_limits_wanted({set}, r615, v2)) << "a limit set already (a later CDI device's hook)";
}

TEST(NvidiaMemoryEnv, GpufracsValuesInPlaceOfNvidiasOrARefusalWhereTheyDisagree) {
  const Inventory inv = machine("h100-80gb-x3-r615.yaml");
  Config cfg;
  const std::vector<LedgerEntry> one{share(inv.gpus[0], 20389ull << 20)};
  EXPECT_TRUE(nvidia_memory_env({"PATH=/bin"}, one, cfg)->empty()) << "neither variable: nothing to write";
  EXPECT_EQ(*nvidia_memory_env({"NVIDIA_GPU_MEMORY_LIMIT=8192"}, one, cfg),
            std::vector<std::string>{"NVIDIA_GPU_MEMORY_LIMIT=20389"});
  cfg.allocation.overcommit = 2.0;
  EXPECT_EQ(*nvidia_memory_env({"NVIDIA_GPU_MEMORY_REQUEST=1", "NVIDIA_GPU_MEMORY_LIMIT=1"}, one, cfg),
            (std::vector<std::string>{"NVIDIA_GPU_MEMORY_LIMIT=20389", "NVIDIA_GPU_MEMORY_REQUEST=10194"}));
  EXPECT_TRUE(check_nvidia_memory_env({"NVIDIA_GPU_MEMORY_LIMIT=20389"}, one, cfg));
  auto r = check_nvidia_memory_env({"NVIDIA_GPU_MEMORY_LIMIT=8192"}, one, cfg);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "NVIDIA_GPU_MEMORY_LIMIT=\"8192\" disagrees with gpufrac's 20389 MiB for this container's share; remove it "
            "or set NVIDIA_GPU_MEMORY_LIMIT=20389 (gpufrac-runtime writes gpufrac's value itself), so the driver holds "
            "one limit");
  auto two = nvidia_memory_env({"NVIDIA_GPU_MEMORY_LIMIT=1"}, {one[0], share(inv.gpus[1], 8ull << 30)}, cfg);
  ASSERT_FALSE(two);
  EXPECT_EQ(two.error().message,
            "NVIDIA_GPU_MEMORY_LIMIT holds one value for every GPU, and the container's shares differ between GPUs "
            "(20389 and 8192 MiB); remove NVIDIA_GPU_MEMORY_LIMIT and NVIDIA_GPU_MEMORY_REQUEST: gpufrac limits each "
            "GPU itself");
}

TEST(DriverLimitExec, TheHelpersArgv) {
  Config cfg;
  cfg.cli_path = "/usr/bin/gpufrac";
  EXPECT_EQ(text::join(driver_limit_set_argv(cfg, LimitCall{"c1", "w0123", false, 4242}), " "),
            "/usr/bin/gpufrac driver-limit set --container c1 --instance w0123 --pid 4242");
  EXPECT_EQ(text::join(driver_limit_set_argv(cfg, LimitCall{"0b1c-2d", "", true, 7}), " "),
            "/usr/bin/gpufrac driver-limit set --claim 0b1c-2d --pid 7");
}

}  // namespace
}  // namespace gpufrac
