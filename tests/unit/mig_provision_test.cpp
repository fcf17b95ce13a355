// The provisioner through the real NVML backend over the fake libnvidia-ml.so.1 (state shared in a
// file, as between the hook's provisioning process and the CLI): the MIG user guide's order,
// reuse, rollback of a half-made instance, recovery from a journal, expiry, and the refreshed
// inventory cache and CDI spec.
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "cdi/spec_write.hpp"
#include "core/fs.hpp"
#include "core/ledger_mig.hpp"
#include "core/mig_plan.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"
#include "nvml/mig_provision.hpp"
#include "nvml/mig_reclaim.hpp"
#include "nvml/mig_steps.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";

class MigProvision : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-mig-provision-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    use_machine("a100-40gb-mig-empty.yaml");
  }
  void TearDown() override {
    for (const char* v : {"GPUFRAC_FAKE_NVML_MACHINE", "GPUFRAC_FAKE_NVML_STATE", "GPUFRAC_FAKE_NVML_FAIL"})
      ::unsetenv(v);
    std::filesystem::remove_all(dir_);
  }
  void use_machine(const std::string& machine, const std::string& extra = "") {
    ::setenv("GPUFRAC_FAKE_NVML_MACHINE", (kMachines + machine).c_str(), 1);
    ::setenv("GPUFRAC_FAKE_NVML_STATE", (dir_ + "/fake-state.json").c_str(), 1);
    auto m = load_simulated_machine(kMachines + machine);
    ASSERT_TRUE(m);
    ASSERT_TRUE(write_simulated_host_root(*m, dir_ + "/root", false));
    auto cfg = load_config_string(
        text::cat("state-dir: ", dir_, "/state\nhost-root: ", dir_, "/root\nnvml: {backend: nvml, library: ",
                  GPUFRAC_FAKE_NVML, "}\nmig: {mode: dynamic", extra, "}\ncdi: {output: ", dir_,
                  "/cdi/gpufrac.yaml}\nhook: {path: /usr/bin/gpufrac-hook}\ndriver: {inject: never}\n"),
        "test.yaml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    cfg_ = *cfg;
    ASSERT_TRUE(rediscover_mig(cfg_));
  }
  Result<ProvisionResult> provision(const std::string& id, const std::string& profile) {
    ReserveArgs a{
        id,         "",          **parse_request({{"gpufrac.io/mig-profile", profile}}, true), BookingSource::hook,
        ::getpid(), std::nullopt};
    return provision_mig(cfg_, a, cdi::spec_refresher(cfg_));
  }
  // "1g.5gb@0 ..." as NVML has it now.
  std::string layout() {
    auto inv = discover(cfg_);
    EXPECT_TRUE(inv) << inv.error().message;
    std::vector<std::pair<std::uint32_t, std::string>> all;
    for (const auto& m : inv->gpus[0].mig_instances)
      all.emplace_back(m.placement.start, placement_text(m.profile_name, m.placement));
    std::sort(all.begin(), all.end());
    std::vector<std::string> out;
    for (auto& [s, t] : all) out.push_back(t);
    return text::join(out, " ");
  }
  std::string dir_;
  Config cfg_;
};

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
