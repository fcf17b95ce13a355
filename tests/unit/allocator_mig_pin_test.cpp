// A MIG pin (GpuPin::mig_uuid, set by CDI MIG devices) restricts a mig-profile request to one
// instance; without it the allocator takes the first idle instance of the profile.
#include <gtest/gtest.h>

#include "core/allocator/allocator.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

Inventory h100() {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/h100-80gb-mig.yaml");
  EXPECT_TRUE(m) << m.error().message;
  for (auto& g : m->inventory.gpus)
    for (auto& i : g.mig_instances) i.cap_nodes = {DeviceNodeInfo{"/dev/nvidia-caps/nvidia-cap30", 509, 30}};
  return m->inventory;
}

Request pinned(const std::string& mig_uuid) {
  Request r;
  r.kind = SizeKind::mig_profile;
  r.mig_profile = "1g.10gb";
  r.gpu = GpuPin{0, "", mig_uuid};
  return r;
}

LedgerEntry booked(const MigInstance& m, const std::string& id) {
  LedgerEntry e;
  e.container_id = id;
  e.device_uuid = m.uuid;
  e.bytes = m.memory_bytes;
  e.exclusive = true;
  e.pid = 1;
  return e;
}

TEST(AllocatorMigPin, TakesThePinnedInstanceOnly) {
  const Inventory inv = h100();
  const MigInstance& first = inv.gpus[0].mig_instances[0];
  const MigInstance& second = inv.gpus[0].mig_instances[1];
  auto g = allocate(pinned(second.uuid), inv, {}, AllocationConfig{});
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->device_uuid, second.uuid);  // not the first idle one
  EXPECT_EQ(g->reason, "idle MIG instance 1g.10gb on GPU 0 gi 8 ci 0");
  auto busy = allocate(pinned(second.uuid), inv, {booked(second, "other")}, AllocationConfig{});
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().message, "no idle MIG instance of profile 1g.10gb: GPU 0 gi 8 ci 0 in use by other");
  EXPECT_EQ(allocate(pinned(first.uuid), inv, {booked(second, "other")}, AllocationConfig{})->device_uuid, first.uuid);
}

TEST(AllocatorMigPin, AnInstanceThatIsGoneIsNamed) {
  auto g = allocate(pinned("MIG-00000000-0000-0000-0000-000000000000"), h100(), {}, AllocationConfig{});
  ASSERT_FALSE(g);
  EXPECT_EQ(
      g.error().message,
      "MIG instance MIG-00000000-0000-0000-0000-000000000000 of profile 1g.10gb is not on GPU 0; GPU 0: 1g.10gb x2");
}

TEST(AllocatorMigPin, DescribeNamesTheInstance) {
  EXPECT_EQ(pinned("MIG-8b24fc5c-ae18-6165-e4c7-7ed76985e0b5").describe(),
            "mig-profile=1g.10gb gpu=MIG-8b24fc5c-ae18-6165-e4c7-7ed76985e0b5");
  EXPECT_EQ((GpuPin{2, "", ""}).describe(), "2");
}

}  // namespace
}  // namespace gpufrac
