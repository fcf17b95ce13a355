// The allocator on a static GPU whose GPU instances are split into compute instances
// (a100-40gb-mig-ci: 3g.20gb@4 as 1c x3 in gi 1, 3g.20gb@0 as 2c + 1c in gi 2): compute instances
// by profile with the equal split or a memory amount, their GPU instance's memory never booked
// twice, one per container per GPU instance, and compute requests by SMs.
#include <gtest/gtest.h>

#include "core/allocator/allocator.hpp"
#include "core/request/request.hpp"
#include "nvml/simulated.hpp"
#include "request_fixture.hpp"

namespace gpufrac {
namespace {

Inventory ci_machine() {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/a100-40gb-mig-ci.yaml");
  EXPECT_TRUE(m) << m.error().message;
  for (auto& i : m->inventory.gpus[0].mig_instances)
    i.cap_nodes = {DeviceNodeInfo{"/dev/nvidia-caps/nvidia-cap30", 509, 30}};
  return m->inventory;
}

Request req(const Annotations& a) {
  return testing::parsed_request(a);
}

// Books what the allocator grants for `container` and returns the grant (or the refusal).
Result<Grant> book(const Annotations& a, const Inventory& inv, std::vector<LedgerEntry>& live,
                   const std::string& container, const AllocationConfig& cfg = {}) {
  auto g = allocate(req(a), inv, live, cfg, {}, MigHolder{container, ""});
  if (!g) return g;
  LedgerEntry e;
  e.container_id = container;
  e.device_key = std::to_string(live.size());
  e.device_uuid = g->device_uuid;
  e.gpu_uuid = g->gpu_uuid;
  e.mig = g->mig;
  e.bytes = g->bytes;
  e.exclusive = g->exclusive;
  e.pid = 1;
  live.push_back(e);
  return g;
}

TEST(AllocatorMigCi, ComputeInstancesBookTheirShareOfTheGpuInstance) {
  const Inventory inv = ci_machine();
  std::vector<LedgerEntry> live;
  auto a = book({{"gpufrac.io/mig-profile", "1c.3g.20gb"}, {"gpufrac.io/memory", "15Gi"}}, inv, live, "a");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->device_uuid, "MIG-1a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c01");
  EXPECT_EQ(a->mig->profile, "1c.3g.20gb");
  EXPECT_EQ(a->bytes, 15 * kGiB);
  EXPECT_EQ(a->compute_ppm, 0u);
  // gi 1 has 4608 MiB left: the equal split (6656 MiB) goes to gi 2's 1c.
  auto b = book({{"gpufrac.io/mig-profile", "1c.3g.20gb"}}, inv, live, "b");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->device_uuid, "MIG-5a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c05");
  EXPECT_EQ(b->bytes, 6656 * kMiB);
  auto c = book({{"gpufrac.io/mig-profile", "1c.3g.20gb"}}, inv, live, "c");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message,
            "no idle MIG instance of profile 1c.3g.20gb: GPU 0 gi 1 ci 0 in use by a, GPU 0 gi 1 ci 1 has 4.5 GiB of "
            "its GPU instance's memory left (needs 6.5 GiB), GPU 0 gi 1 ci 2 has 4.5 GiB of its GPU instance's "
            "memory left (needs 6.5 GiB), GPU 0 gi 2 ci 1 in use by b");
  auto small = book({{"gpufrac.io/mig-profile", "1c.3g.20gb"}, {"gpufrac.io/memory", "4Gi"}}, inv, live, "c");
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_EQ(small->device_uuid, "MIG-2a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c02");
}

TEST(AllocatorMigCi, OneComputeInstancePerGpuInstancePerContainer) {
  const Inventory inv = ci_machine();
  std::vector<LedgerEntry> live;
  ASSERT_TRUE(book({{"gpufrac.io/mig-profile", "1c.3g.20gb"}}, inv, live, "x"));
  auto second = book({{"gpufrac.io/mig-profile", "1c.3g.20gb"}}, inv, live, "x");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->mig->gi, 2u);  // gi 1 ci 1 is free, but x holds gi 1 ci 0
  Request pinned = req({{"gpufrac.io/mig-profile", "1c.3g.20gb"}});
  pinned.gpu = GpuPin{0, "", "MIG-3a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c03"};
  auto refused = allocate(pinned, inv, live, {}, {}, MigHolder{"x", ""});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "no idle MIG instance of profile 1c.3g.20gb: GPU 0 gi 1 ci 2 is in GPU instance 1, of which x holds a "
            "compute instance already (CUDA enumerates one per GPU instance)");
  EXPECT_TRUE(allocate(pinned, inv, live, {}, {}, MigHolder{"y", ""}));  // another container may
}

TEST(AllocatorMigCi, ComputeRequestsTakeTheFewestSms) {
  const Inventory inv = ci_machine();
  AllocationConfig cfg;
  cfg.mig_serves_fractions = true;
  std::vector<LedgerEntry> live;
  // 20 % of 98 SMs is 20: the 2c.3g.20gb (28), booking the request's 4 GiB of its GPU instance.
  auto g = book({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/compute", "20"}}, inv, live, "a", cfg);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->mig->profile, "2c.3g.20gb");
  EXPECT_EQ(g->bytes, 4 * kGiB);
  EXPECT_EQ(g->reason,
            "mig-serves-fractions: smallest idle MIG instance holding memory=4Gi compute=20 (28 of 98 SMs, 4.0 GiB): "
            "2c.3g.20gb on GPU 0 gi 2 ci 0");
  // 10 % needs 10 SMs: a 1c (14).
  EXPECT_EQ(book({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/compute", "10"}}, inv, live, "b", cfg)->mig->profile,
            "1c.3g.20gb");
  // 30 % needs 30: no compute instance has them; no whole GPU instance is there to take.
  auto none = book({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/compute", "30"}}, inv, live, "c", cfg);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message,
            "no GPU can take memory=4Gi compute=30: GPU 0 is in MIG mode; no idle MIG instance holds memory=4Gi "
            "compute=30");
}

}  // namespace
}  // namespace gpufrac
