#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/plan/plan.hpp"
#include "nvml/discover.hpp"

namespace gpufrac {
namespace {

class PlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = default_config();
    cfg_.nvml.backend = NvmlBackend::simulated;
    cfg_.nvml.machine = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/dgx-8gpu-mixed.yaml";
    cfg_.host_root = "/nonexistent-root";
    cfg_.state_dir = "/run/gpufrac-test";
    cfg_.shim_path = "/usr/lib/gpufrac/libgpufrac-limits.so";
    auto inv = discover(cfg_);
    ASSERT_TRUE(inv) << inv.error().message;
    inv_ = *inv;
  }
  Grant share_of(std::uint32_t gpu) {
    const Gpu& g = inv_.gpus.at(gpu);
    return Grant{g.uuid, g.index, g.uuid, std::nullopt, g.memory_bytes / 4, false, "test"};
  }
  Grant mig_of(std::uint32_t gpu, std::size_t instance) {
    const Gpu& g = inv_.gpus.at(gpu);
    const MigInstance& m = g.mig_instances.at(instance);
    return Grant{m.uuid, g.index, g.uuid, MigRef{m.gi_id, m.ci_id, m.profile_name}, m.memory_bytes, true, "test"};
  }
  Config cfg_;
  Inventory inv_;
};

TEST_F(PlanTest, ShareGetsItsGpuAndControlNodes) {
  auto nodes = plan_device_nodes({share_of(2)}, inv_, cfg_);
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 4u);
  EXPECT_EQ((*nodes)[0],
            (EditDeviceNode{"/dev/nvidiactl", "/nonexistent-root/dev/nvidiactl", 'c', 195, 255, 0666u, "rw"}));
  EXPECT_EQ((*nodes)[1].path, "/dev/nvidia-uvm");
  EXPECT_EQ((*nodes)[1].major, 508);
  EXPECT_EQ((*nodes)[2].path, "/dev/nvidia-uvm-tools");
  EXPECT_EQ((*nodes)[2].minor, 1);
  EXPECT_EQ((*nodes)[3], (EditDeviceNode{"/dev/nvidia2", "/nonexistent-root/dev/nvidia2", 'c', 195, 2, 0666u, "rw"}));
}

TEST_F(PlanTest, MigInstanceGetsParentAndBothCapNodes) {
  auto nodes = plan_device_nodes({mig_of(4, 0)}, inv_, cfg_);
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 6u);
  EXPECT_EQ((*nodes)[3].path, "/dev/nvidia4");
  // gpu4/gi1/access and gpu4/gi1/ci0/access: minors from the simulated driver's mig-minors table.
  EXPECT_EQ((*nodes)[4],
            (EditDeviceNode{"/dev/nvidia-caps/nvidia-cap552", "/nonexistent-root/dev/nvidia-caps/nvidia-cap552", 'c',
                            509, 552, 0666u, "rw"}));
  EXPECT_EQ((*nodes)[5].minor, 553);
}

TEST_F(PlanTest, TwoGrantsOnOneGpuShareNodesOnce) {
  auto nodes = plan_device_nodes({share_of(1), share_of(1), share_of(3)}, inv_, cfg_);
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->size(), 5u);
}

TEST_F(PlanTest, UnknownMajorsFailClearly) {
  inv_.gpus[2].node.major = -1;
  auto nodes = plan_device_nodes({share_of(2)}, inv_, cfg_);
  ASSERT_FALSE(nodes);
  EXPECT_NE(nodes.error().message.find("no device major for /dev/nvidia2"), std::string::npos) << nodes.error().message;
}

TEST_F(PlanTest, MigWithoutCapNodesFailsClearly) {
  inv_.gpus[4].mig_instances[0].cap_nodes.clear();
  auto nodes = plan_device_nodes({mig_of(4, 0)}, inv_, cfg_);
  ASSERT_FALSE(nodes);
  EXPECT_NE(nodes.error().message.find("no capability device nodes"), std::string::npos);
}

TEST_F(PlanTest, ContainerEditsMountTmpfsShimAndState) {
  auto e = plan_container_edits({share_of(0)}, inv_, cfg_, "c1", false);
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ(e->mounts.size(), 5u);
  EXPECT_EQ(e->mounts[0].type, "tmpfs");
  EXPECT_EQ(e->mounts[0].container_path, "/run/gpufrac");
  EXPECT_EQ(e->mounts[1], (EditMount{"/usr/lib/gpufrac/libgpufrac-limits.so",
                                     "/run/gpufrac/libgpufrac-limits.so",
                                     "bind",
                                     {"ro", "nosuid", "nodev", "bind"}}));
  EXPECT_EQ(e->mounts[2].host_path, "/run/gpufrac-test/containers/c1/limits");
  EXPECT_EQ(e->mounts[2].options.front(), "ro");
  EXPECT_EQ(e->mounts[3].container_path, "/run/gpufrac/usage");
  EXPECT_EQ(e->mounts[3].options.front(), "nosuid");  // rw: the shim writes it
  EXPECT_EQ(e->mounts[4].container_path, "/etc/ld.so.preload");
  EXPECT_EQ(e->env.at(0), "GPUFRAC_DEVICES=" + inv_.gpus[0].uuid);
  EXPECT_TRUE(e->hooks.empty());
  auto cdi = to_cdi_json(*e);
  EXPECT_EQ(cdi["deviceNodes"][0]["hostPath"], "/nonexistent-root/dev/nvidiactl");
  EXPECT_EQ(cdi["deviceNodes"][0]["fileMode"], 438);
  EXPECT_EQ(cdi["mounts"][0]["type"], "tmpfs");
}

// gpufrac's directory is the hook's to mount in every front-end: a spec (the wrapper's config.json,
// a DRA claim's CDI spec) carries everything else, never /run/gpufrac or anything in it.
TEST_F(PlanTest, SpecEditsLeaveGpufracsDirectoryToTheHook) {
  auto full = plan_container_edits({share_of(0)}, inv_, cfg_, "c1", false);
  auto spec = plan_spec_edits({share_of(0)}, inv_, cfg_, "c1", false);
  ASSERT_TRUE(full && spec);
  auto dir = plan_gpufrac_dir(cfg_, container_files(cfg_, "c1"), {share_of(0)});
  ASSERT_EQ(dir.size(), 4u);
  EXPECT_EQ(std::vector<EditMount>(full->mounts.begin(), full->mounts.begin() + 4), dir);
  ASSERT_EQ(spec->mounts.size(), 1u);
  EXPECT_EQ(spec->mounts[0].container_path, "/etc/ld.so.preload");
  EXPECT_EQ(spec->device_nodes, full->device_nodes);
  EXPECT_EQ(spec->env, full->env);
}

TEST_F(PlanTest, ComputeSharesMountTheirGpusArbiter) {
  Grant a = share_of(0), b = share_of(0), c = share_of(1);
  a.compute_ppm = 300000;
  b.compute_ppm = 200000;  // a second share of the same GPU: one arbiter
  auto e = plan_container_edits({a, b, c}, inv_, cfg_, "c1", false);
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ(e->mounts.size(), 9u) << "c has no compute share: no arbiter";
  const std::string host = "/run/gpufrac-test/compute/" + inv_.gpus[0].uuid + ".d/" + inv_.gpus[0].uuid;
  EXPECT_EQ(
      e->mounts[5],
      (EditMount{host, "/run/gpufrac/compute/" + inv_.gpus[0].uuid, "bind", {"nosuid", "nodev", "noexec", "bind"}}));
  EXPECT_EQ(e->mounts[6], (EditMount{host + ".slots",
                                     "/run/gpufrac/compute/" + inv_.gpus[0].uuid + ".slots",
                                     "bind",
                                     {"ro", "nosuid", "nodev", "noexec", "bind"}}))
      << "the host's decisions: read-only";
  EXPECT_EQ(e->mounts[7], (EditMount{host + ".lanes",
                                     "/run/gpufrac/compute/" + inv_.gpus[0].uuid + ".lanes",
                                     "bind",
                                     {"ro", "nosuid", "nodev", "noexec", "bind"}}))
      << "the others' lanes: read-only";
  EXPECT_EQ(e->mounts[8], (EditMount{host + ".lanes/c1",
                                     "/run/gpufrac/compute/" + inv_.gpus[0].uuid + ".lane",
                                     "bind",
                                     {"nosuid", "nodev", "noexec", "bind"}}))
      << "its own lane: read-write";
  auto dir = plan_gpufrac_dir(cfg_, container_files(cfg_, "c1"), {a});
  ASSERT_EQ(dir.size(), 8u) << "every front-end: the same four arbiter mounts";
  EXPECT_EQ(dir[7], e->mounts[8]);
  EXPECT_EQ(compute_arbiter_path(cfg_, "GPU-x"), "/run/gpufrac-test/compute/GPU-x.d/GPU-x") << "on the GPU's own tmpfs";
  EXPECT_TRUE(plan_compute_mounts({c}, cfg_, "k").empty());
  c.compute_ppm = 1000000;
  EXPECT_TRUE(plan_compute_mounts({c}, cfg_, "k").empty()) << "a whole GPU is never arbitrated";
}

TEST_F(PlanTest, HooksCarryAnExplicitEnvironment) {
  cfg_.source = "/etc/gpufrac/config.yaml";
  cfg_.hook_path = "/usr/bin/gpufrac-hook";
  EditHook h = plan_hook(cfg_, "poststop", "poststop", {"--cdi-device", "0-0.25"});
  EXPECT_EQ(h.path, "/usr/bin/gpufrac-hook");
  EXPECT_EQ(h.timeout, 30);
  EXPECT_EQ(h.args, (std::vector<std::string>{"gpufrac-hook", "poststop", "--cdi-device", "0-0.25"}));
  EXPECT_EQ(h.env, (std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                             "GPUFRAC_CONFIG=/etc/gpufrac/config.yaml"}));
  cfg_.source = "<built-in defaults>";
  EXPECT_EQ(plan_hook(cfg_, "createRuntime", "createRuntime").env.size(), 1u);
}

TEST(Preload, ShimFirstThenImageEntries) {
  EXPECT_EQ(render_preload(""), "/run/gpufrac/libgpufrac-limits.so\n");
  EXPECT_EQ(
      render_preload("/lib/a.so /lib/b.so\n# comment /lib/c.so\n\n/lib/a.so\n/run/gpufrac/libgpufrac-limits.so\n"),
      "/run/gpufrac/libgpufrac-limits.so\n/lib/a.so\n/lib/b.so\n");
}

}  // namespace
}  // namespace gpufrac
