#include <gtest/gtest.h>

#include "nvml/device_nodes.hpp"
#include "nvml/sim_root.hpp"
#include "scratch_dir.hpp"

namespace gpufrac {
namespace {

TEST(DeviceNodes, ParsesCharacterMajorsOnly) {
  auto f = parse_proc_devices(
      "Character devices:\n  1 mem\n195 nvidia-frontend\n235 nvidia-caps\n510 nvidia-uvm\n\nBlock devices:\n195 "
      "nvidia\n");
  EXPECT_EQ(f.nvidia_major, 195);
  EXPECT_EQ(f.uvm_major, 510);
  EXPECT_EQ(f.caps_major, 235);
}

TEST(DeviceNodes, NewDriverCallsItNvidia) {
  auto f = parse_proc_devices("Character devices:\n195 nvidia\n");
  EXPECT_EQ(f.nvidia_major, 195);
  EXPECT_FALSE(f.uvm_major);
}

TEST(DeviceNodes, ParsesMigMinors) {
  auto m = parse_mig_minors("config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngarbage\n");
  EXPECT_EQ(m.at("gpu0/gi1/access"), 12);
  EXPECT_EQ(m.at("gpu0/gi1/ci0/access"), 13);
  EXPECT_EQ(m.size(), 4u);
}

TEST(DeviceNodes, AttachesFromFilesNotFormula) {
  Inventory inv;
  Gpu g;
  g.minor = 3;
  MigInstance m;
  m.gi_id = 2;
  m.ci_id = 0;
  g.mig_instances.push_back(m);
  inv.gpus.push_back(g);
  HostDriverFiles f;
  f.nvidia_major = 195;
  f.uvm_major = 508;
  f.caps_major = 509;
  f.mig_minors = {{"gpu3/gi2/access", 1000}, {"gpu3/gi2/ci0/access", 1001}};
  attach_device_nodes(inv, f);
  EXPECT_EQ(inv.gpus[0].node, (DeviceNodeInfo{"/dev/nvidia3", 195, 3}));
  ASSERT_EQ(inv.gpus[0].mig_instances[0].cap_nodes.size(), 2u);
  EXPECT_EQ(inv.gpus[0].mig_instances[0].cap_nodes[0], (DeviceNodeInfo{"/dev/nvidia-caps/nvidia-cap1000", 509, 1000}));
  EXPECT_EQ(inv.control_nodes.at(2), (DeviceNodeInfo{"/dev/nvidia-uvm-tools", 508, 1}));
}

TEST(DeviceNodes, MissingCapsLeaveInstanceWithoutNodes) {
  Inventory inv;
  Gpu g;
  g.mig_instances.push_back(MigInstance{});
  inv.gpus.push_back(g);
  attach_device_nodes(inv, HostDriverFiles{});
  EXPECT_TRUE(inv.gpus[0].mig_instances[0].cap_nodes.empty());
  EXPECT_EQ(inv.gpus[0].node.major, -1);
}

TEST(DeviceNodes, SimulatedRootRoundTrips) {
  const std::string root = test::scratch_dir("gpufrac-root");
  auto machine = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/a100-80gb-mig.yaml");
  ASSERT_TRUE(machine);
  ASSERT_TRUE(write_simulated_host_root(*machine, root, false));
  auto files = read_host_driver_files(root);
  ASSERT_TRUE(files);
  EXPECT_EQ(files->uvm_major, 508);
  EXPECT_EQ(files->mig_minors.at("gpu0/gi1/access"), 12);
  EXPECT_EQ(files->mig_minors.at("gpu0/gi1/ci0/access"), 13);
}

}  // namespace
}  // namespace gpufrac
