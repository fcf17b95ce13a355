// The provisioner through the real NVML backend over the fake libnvidia-ml.so.1 (state shared in a
// file, as between the hook's provisioning process and the CLI): the MIG user guide's order,
// reuse, rollback of a half-made instance, recovery from a journal, expiry, and the refreshed
// inventory cache and CDI spec.
#include "mig_provision_fixture.hpp"

namespace gpufrac {
namespace {

using test::MigProvision;

TEST_F(MigProvision, GuideOrderThroughNvml) {
  for (const char* p : {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"}) {
    auto r = provision(text::cat("c", p, "-", layout().size()), p);
    ASSERT_TRUE(r) << p << ": " << r.error().message;
    ASSERT_TRUE(r->created);
    EXPECT_EQ(r->booking.grant.mig->profile, p);
  }
  EXPECT_EQ(layout(), "1g.5gb@0 1g.5gb@1 2g.10gb@2 3g.20gb@4");
  // The cache and the CDI spec follow every change.
  auto cached = read_inventory_cache(cfg_);
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->gpus[0].mig_instances.size(), 4u);
  auto spec = fs::read_file(dir_ + "/cdi/gpufrac.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  for (const auto& m : cached->gpus[0].mig_instances) EXPECT_NE(spec->find(m.uuid), std::string::npos) << m.uuid;
}

TEST_F(MigProvision, ReleasedInstanceIsReusedWithoutNvml) {
  auto first = provision("a", "2g.10gb");
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(Ledger(LedgerOptions::from(cfg_)).release("a"));
  ::setenv("GPUFRAC_FAKE_NVML_FAIL", "nvmlDeviceCreateGpuInstanceWithPlacement", 1);
  auto again = provision("b", "2g.10gb");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->booking.grant.device_uuid, first->booking.grant.device_uuid);
}

TEST_F(MigProvision, HalfMadeInstanceIsRolledBack) {
  ::setenv("GPUFRAC_FAKE_NVML_FAIL", "nvmlGpuInstanceCreateComputeInstance", 1);
  auto r = provision("a", "3g.20gb");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "creating the compute instance of 3g.20gb@4 (GPU instance 1, destroyed again): "
            "nvmlGpuInstanceCreateComputeInstance: Unknown Error (999)");
  ::unsetenv("GPUFRAC_FAKE_NVML_FAIL");
  auto driver = MigDriver::open(cfg_);
  ASSERT_TRUE(driver);
  auto device = nvml::mig_device(driver->lib(), read_inventory_cache(cfg_)->gpus[0].uuid);
  auto gis = nvml::list_gpu_instances(driver->lib(), *device, read_inventory_cache(cfg_)->gpus[0].mig_profiles);
  ASSERT_TRUE(gis);
  EXPECT_TRUE(gis->empty());
  EXPECT_FALSE(fs::exists(mig_journal_path(cfg_, read_inventory_cache(cfg_)->gpus[0].uuid)));
  EXPECT_TRUE(Ledger(LedgerOptions::from(cfg_)).read()->entries.empty());
}

TEST_F(MigProvision, JournalLeftByAKilledProvisionerIsUndone) {
  const Gpu gpu = read_inventory_cache(cfg_)->gpus[0];
  {  // What a provisioner killed after the GPU instance leaves: the journal and a bare GPU instance.
    auto driver = MigDriver::open(cfg_);
    ASSERT_TRUE(driver);
    ASSERT_TRUE(write_mig_journal(cfg_, MigJournal{gpu.uuid, 9, "3g.20gb", 4, "dead", 1}));
    auto device = nvml::mig_device(driver->lib(), gpu.uuid);
    nvmlGpuInstancePlacement_t pl{4, 4};
    nvmlGpuInstance_t gi = nullptr;
    ASSERT_EQ(driver->lib().fn().nvmlDeviceCreateGpuInstanceWithPlacement(*device, 9, &pl, &gi), NVML_SUCCESS);
  }
  auto r = provision("a", "3g.20gb");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->notes.at(0), "destroyed half-made GPU instance 1 (3g.20gb@4) of dead");
  EXPECT_EQ(layout(), "3g.20gb@4");
  EXPECT_FALSE(fs::exists(mig_journal_path(cfg_, gpu.uuid)));
}

TEST_F(MigProvision, BlockingIdleInstancesAreDestroyedAndExpiredOnesByGc) {
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(provision(id, "2g.10gb"));
  EXPECT_EQ(layout(), "2g.10gb@0 2g.10gb@2 2g.10gb@4");
  Ledger ledger(LedgerOptions::from(cfg_));
  ASSERT_TRUE(ledger.release("c"));
  auto r = provision("d", "3g.20gb");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->destroyed.size(), 1u);
  EXPECT_EQ(r->destroyed[0].placement.start, 4u);
  EXPECT_EQ(layout(), "2g.10gb@0 2g.10gb@2 3g.20gb@4");
  ASSERT_TRUE(ledger.release("a"));
  auto kept = reclaim_idle_mig(cfg_, ::time(nullptr), cdi::spec_refresher(cfg_));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_TRUE(kept->destroyed.empty());
  ASSERT_EQ(kept->idle.size(), 1u);
  EXPECT_EQ(kept->idle[0].placement.start, 0u);
  auto gone = reclaim_idle_mig(cfg_, ::time(nullptr) + 600, cdi::spec_refresher(cfg_));
  ASSERT_TRUE(gone) << gone.error().message;
  ASSERT_EQ(gone->destroyed.size(), 1u);
  EXPECT_TRUE(gone->idle.empty());
  EXPECT_EQ(layout(), "2g.10gb@2 3g.20gb@4");
  EXPECT_TRUE(ledger.read()->mig_idle.empty());
}

TEST_F(MigProvision, RefusalsItCannotCureCreateNothing) {
  ReserveArgs a{
      "gone",  "",          **parse_request({{"gpufrac.io/mig-profile", "1g.5gb"}}, true), BookingSource::hook,
      4194304, std::nullopt};
  auto r = provision_mig(cfg_, a, cdi::spec_refresher(cfg_));
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().message.starts_with("process 4194304 does not exist")) << r.error().message;
  ASSERT_TRUE(provision("twice", "1g.5gb"));
  r = provision("twice", "2g.10gb");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "container twice already holds a booking for mig-profile=1g.5gb; release it before asking for "
            "mig-profile=2g.10gb");
  EXPECT_EQ(layout(), "1g.5gb@0");
}

TEST_F(MigProvision, RefusalNamesWhatIsInTheWay) {
  ASSERT_TRUE(provision("a", "4g.20gb"));
  ASSERT_TRUE(provision("b", "3g.20gb"));
  auto r = provision("c", "1g.5gb");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  EXPECT_EQ(r.error().message,
            "no MIG instance for mig-profile=1g.5gb fits on a dynamic MIG GPU, even after destroying idle ones: "
            "GPU 0: 4g.20gb@0 (a), 3g.20gb@4 (b)");
}

}  // namespace
}  // namespace gpufrac
