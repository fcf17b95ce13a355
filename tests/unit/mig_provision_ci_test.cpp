// The provisioner with compute instances, through the real NVML backend over the fake driver:
// compute instances added to a GPU instance and sharing its memory, the list of what gpufrac made,
// the journal of a compute instance, rollback, and gc's lazy destruction that spares compute
// instances gpufrac did not make.
#include "mig_provision_fixture.hpp"
#include "nvml/mig_made.hpp"

namespace gpufrac {
namespace {

using test::MigProvision;

TEST_F(MigProvision, ComputeInstancesShareTheirGpuInstance) {
  const std::string gpu = read_inventory_cache(cfg_)->gpus[0].uuid;
  std::vector<std::string> uuids;
  for (const char* id : {"a", "b", "c"}) {
    auto r = provision(id, "1c.3g.20gb");
    ASSERT_TRUE(r) << id << ": " << r.error().message;
    ASSERT_TRUE(r->created);
    EXPECT_EQ(r->booking.grant.mig->profile, "1c.3g.20gb");
    EXPECT_EQ(r->booking.grant.bytes, 6656 * kMiB);  // 19968 MiB / 3
    EXPECT_EQ(r->created->gi.has_value(), std::string(id) != "a");
    uuids.push_back(r->booking.grant.device_uuid);
  }
  EXPECT_EQ(layout(), "1c.3g.20gb@4:0 1c.3g.20gb@4:1 1c.3g.20gb@4:2");
  EXPECT_EQ(*read_mig_made(cfg_, gpu), uuids);
  EXPECT_FALSE(fs::exists(mig_journal_path(cfg_, gpu)));
  // The inventory lists each with its SMs; the GPU instance's table is known from now on.
  auto inv = read_inventory_cache(cfg_);
  ASSERT_EQ(inv->gpus[0].mig_instances.size(), 3u);
  EXPECT_EQ(inv->gpus[0].mig_instances[0].multiprocessors, 14u);
  EXPECT_EQ(inv->gpus[0].profile_by_name("3g.20gb")->compute_profiles.size(), 3u);
  // A second one for the same container goes to another GPU instance.
  ReserveArgs again{
      "a",        "second",    **parse_request({{"gpufrac.io/mig-profile", "1c.3g.20gb"}}, true), BookingSource::hook,
      ::getpid(), std::nullopt};
  auto second = provision_mig(cfg_, again, cdi::spec_refresher(cfg_));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(layout(), "1c.3g.20gb@0:2 1c.3g.20gb@4:0 1c.3g.20gb@4:1 1c.3g.20gb@4:2");
}

TEST_F(MigProvision, ComputeAndMemoryPickAWholeGpuInstance) {
  auto r = provision_request("x", {{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/compute", "40"}});
  ASSERT_FALSE(r);  // compute reaches MIG only with mig-serves-fractions
  use_machine("h100-80gb-mig-empty.yaml", "}\nallocation: {mig-serves-fractions: true");
  r = provision_request("x", {{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/compute", "40"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->booking.grant.mig->profile, "3g.40gb");
  EXPECT_EQ(r->booking.grant.compute_ppm, 0u);
  EXPECT_EQ(layout(), "3g.40gb@4");
}

TEST_F(MigProvision, ComputeInstanceFailuresLeaveNothingHalfMade) {
  // No GPU instance has told NVML's compute instance table yet: the driver places the first one.
  ::setenv("GPUFRAC_FAKE_NVML_FAIL", "nvmlGpuInstanceCreateComputeInstance", 1);
  auto r = provision("a", "1c.3g.20gb");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "creating the compute instance of 3g.20gb@4 (GPU instance 1, destroyed again): "
            "nvmlGpuInstanceCreateComputeInstance: Unknown Error (999)");
  EXPECT_EQ(layout(), "");
  ::unsetenv("GPUFRAC_FAKE_NVML_FAIL");
  ASSERT_TRUE(provision("a", "1c.3g.20gb"));
  ::setenv("GPUFRAC_FAKE_NVML_FAIL", "nvmlGpuInstanceCreateComputeInstanceWithPlacement", 1);
  r = provision("b", "1c.3g.20gb");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "creating a compute instance of 1 slice in MIG GPU instance 1: "
            "nvmlGpuInstanceCreateComputeInstanceWithPlacement: Unknown Error (999)");
  EXPECT_EQ(layout(), "1c.3g.20gb@4:0");
  const std::string gpu = read_inventory_cache(cfg_)->gpus[0].uuid;
  EXPECT_FALSE(fs::exists(mig_journal_path(cfg_, gpu)));
  EXPECT_EQ(read_mig_made(cfg_, gpu)->size(), 1u);
}

TEST_F(MigProvision, JournalOfAComputeInstanceAdoptsIt) {
  ASSERT_TRUE(provision("a", "1c.3g.20gb"));
  const Gpu gpu = read_inventory_cache(cfg_)->gpus[0];
  {  // A provisioner killed after adding a compute instance: the journal names the GPU instance.
    auto driver = MigDriver::open(cfg_);
    ASSERT_TRUE(driver);
    MigJournal j{gpu.uuid, 9, "3g.20gb", 4, "dead", 1};
    j.gi = 1;
    j.cis_before = {0};
    ASSERT_TRUE(write_mig_journal(cfg_, j));
    auto device = nvml::mig_device(driver->lib(), gpu.uuid);
    ASSERT_TRUE(nvml::add_compute_instance(driver->lib(), *device, 1, {1, std::nullopt, std::nullopt}));
  }
  auto r = provision("b", "1c.3g.20gb");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->notes.at(0), "journal of a compute instance in GPU instance 1: compute instance 1 is whole, kept");
  EXPECT_FALSE(r->created);  // the adopted one is idle: reused
  EXPECT_EQ(layout(), "1c.3g.20gb@4:0 1c.3g.20gb@4:1");
  EXPECT_EQ(read_mig_made(cfg_, gpu.uuid)->size(), 2u);
}

TEST_F(MigProvision, GcDestroysSplitGpuInstancesOnlyWhenGpufracMadeThem) {
  for (const char* id : {"a", "b"}) ASSERT_TRUE(provision(id, "1c.3g.20gb"));
  Ledger ledger(LedgerOptions::from(cfg_));
  ASSERT_TRUE(ledger.release("a"));
  auto kept = reclaim_idle_mig(cfg_, ::time(nullptr) + 600, cdi::spec_refresher(cfg_));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_TRUE(kept->destroyed.empty());  // b still holds one of its compute instances
  ASSERT_TRUE(ledger.release("b"));
  auto gone = reclaim_idle_mig(cfg_, ::time(nullptr) + 600, cdi::spec_refresher(cfg_));
  ASSERT_TRUE(gone) << gone.error().message;
  EXPECT_EQ(gone->destroyed.size(), 2u);
  EXPECT_EQ(layout(), "");
  EXPECT_TRUE(read_mig_made(cfg_, read_inventory_cache(cfg_)->gpus[0].uuid)->empty());
  // mig-parted's compute instances: idle long past the timeout, never destroyed.
  use_machine("a100-40gb-mig-ci.yaml");
  ASSERT_TRUE(reclaim_idle_mig(cfg_, ::time(nullptr), cdi::spec_refresher(cfg_)));  // adopted as idle now
  auto found = reclaim_idle_mig(cfg_, ::time(nullptr) + 6000, cdi::spec_refresher(cfg_));
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_TRUE(found->destroyed.empty());
  EXPECT_EQ(found->idle.size(), 5u);
  auto r = provision("c", "1c.3g.20gb");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->booking.grant.device_uuid, "MIG-1a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c01");
  EXPECT_FALSE(provision("d", "7g.40gb"));
}

}  // namespace
}  // namespace gpufrac
