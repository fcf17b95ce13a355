#include <gtest/gtest.h>

#include <filesystem>

#include "core/mig/mig_device.hpp"
#include "core/text.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";

TEST(Simulated, EveryShippedMachineLoads) {
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(kMachines)) {
    auto m = load_simulated_machine(e.path());
    ASSERT_TRUE(m) << e.path() << ": " << m.error().message;
    EXPECT_FALSE(m->inventory.gpus.empty());
    ++count;
  }
  EXPECT_GE(count, 5);
}

TEST(Simulated, A100With80GbMigInstances) {
  auto m = load_simulated_machine(kMachines + "a100-80gb-mig.yaml");
  ASSERT_TRUE(m) << m.error().message;
  const Gpu& g = m->inventory.gpus.at(0);
  EXPECT_TRUE(g.mig_enabled);
  EXPECT_EQ(g.memory_slices(), 8u);
  ASSERT_EQ(g.mig_instances.size(), 4u);
  const MigInstance& big = g.mig_instances[0];
  EXPECT_EQ(big.profile_name, "3g.40gb");
  EXPECT_EQ(big.profile_id, 9u);
  EXPECT_EQ(big.placement, (MigPlacement{4, 4}));
  EXPECT_EQ(big.memory_bytes, 40192ull << 20);
  const MigProfile* p = g.profile_by_name("1g.20gb");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->id, 15u);
  EXPECT_EQ(p->placement_starts, (std::vector<std::uint32_t>{0, 2, 4, 6}));
}

TEST(Simulated, DgxMixesMigAndWholeGpus) {
  auto m = load_simulated_machine(kMachines + "dgx-8gpu-mixed.yaml");
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->inventory.gpus.size(), 8u);
  int mig = 0;
  for (const auto& g : m->inventory.gpus) mig += g.mig_enabled;
  EXPECT_EQ(mig, 4);
  EXPECT_EQ(m->inventory.gpus[6].mig_instances.size(), 7u);
}

TEST(Simulated, ProfilesAreListedOnlyWhileMigIsOn) {
  auto m = load_simulated_machine(kMachines + "dgx-8gpu-mixed.yaml");
  ASSERT_TRUE(m) << m.error().message;
  const Gpu& off = m->inventory.gpus[0];
  EXPECT_TRUE(off.mig_capable);
  EXPECT_FALSE(off.mig_enabled);
  EXPECT_TRUE(off.mig_profiles.empty());  // as NVML: no profile info while MIG mode is off
  EXPECT_EQ(off.memory_slices(), 0u);
  ASSERT_EQ(m->mig_profile_tables.size(), 8u);
  ASSERT_EQ(m->mig_profile_tables[0].size(), 7u);  // the table stays for the fake driver
  EXPECT_EQ(m->mig_profile_tables[0][6].name, "7g.80gb");
  // GPU 7 has no instance: NVML answers compute instance profiles only for a GPU instance, so the
  // inventory lists the GI profiles without them; the fake driver's table keeps them.
  auto without_ci = m->mig_profile_tables[7];
  for (auto& p : without_ci) {
    EXPECT_FALSE(p.compute_profiles.empty()) << p.name;
    p.compute_profiles.clear();
  }
  EXPECT_EQ(m->inventory.gpus[7].mig_profiles, without_ci);
}

TEST(Simulated, InstancesAndProfilesComeInCanonicalOrder) {
  const std::string yaml = R"(driver-version: "550.54.15"
profile-sets:
  p:
    - {index: 2, id: 9, name: 3g.20gb, compute-slices: 3, memory-slices: 4, memory-mib: 19968, max: 2, placements: [4, 0]}
    - {index: 0, id: 19, name: 1g.5gb, compute-slices: 1, memory-slices: 1, memory-mib: 4864, max: 7, placements: [0, 1, 2, 3, 4, 5, 6]}
gpus:
  - {name: A100, uuid: GPU-11111111-2222-3333-4444-555555555555, pci-bus-id: "0:7:0.0", memory-mib: 40536,
     compute-capability: "8.0", mig: {enabled: true, profiles: p, instances: [
       {gi: 7, ci: 1, profile: 1g.5gb, start: 0, uuid: MIG-11111111-2222-3333-4444-555555555557},
       {gi: 2, profile: 3g.20gb, start: 4, uuid: MIG-11111111-2222-3333-4444-555555555552}]}}
)";
  auto m = load_simulated_machine_string(yaml, "m.yaml");
  ASSERT_TRUE(m) << m.error().message;
  const Gpu& g = m->inventory.gpus[0];
  ASSERT_EQ(g.mig_instances.size(), 2u);
  EXPECT_EQ(g.mig_instances[0].gi_id, 2u);
  EXPECT_EQ(g.mig_instances[1].gi_id, 7u);
  EXPECT_EQ(g.mig_instances[1].ci_id, 1u);
  ASSERT_EQ(g.mig_profiles.size(), 2u);
  EXPECT_EQ(g.mig_profiles[0].name, "1g.5gb");
  EXPECT_EQ(g.mig_profiles[1].placement_starts, (std::vector<std::uint32_t>{0, 4}));
}

struct BadMachine {
  const char* yaml;
  const char* expected;
};

void PrintTo(const BadMachine& c, std::ostream* os) {
  *os << c.yaml;
}

class MalformedMachine : public ::testing::TestWithParam<BadMachine> {};

constexpr const char* kProfiles = R"(profile-sets:
  p:
    - {index: 0, id: 19, name: 1g.5gb, compute-slices: 1, memory-slices: 1, memory-mib: 4864, max: 7, placements: [0, 1, 2, 3, 4, 5, 6]}
    - {index: 2, id: 9, name: 3g.20gb, compute-slices: 3, memory-slices: 4, memory-mib: 19968, max: 2, placements: [0, 4]}
)";

std::string machine(const std::string& gpus) {
  return std::string("driver-version: \"550.54.15\"\n") + kProfiles + "gpus:\n" + gpus;
}

constexpr const char* kGpu =
    "  - {name: A100, uuid: GPU-11111111-2222-3333-4444-555555555555, pci-bus-id: \"0:7:0.0\", memory-mib: 40536, "
    "compute-capability: \"8.0\"";

TEST_P(MalformedMachine, OneLineWithFileLineAndKey) {
  auto m = load_simulated_machine_string(GetParam().yaml, "m.yaml");
  ASSERT_FALSE(m);
  const std::string& msg = m.error().message;
  EXPECT_NE(msg.find(GetParam().expected), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_TRUE(msg.starts_with("m.yaml")) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedMachine,
    ::testing::Values(
        BadMachine{"gpus: []\ndriver-version: x\n", "gpus: must be a non-empty list"},
        BadMachine{"gpus:\n  - {name: x}\n", "m.yaml:1: driver-version: missing"},
        BadMachine{"driver-version: x\ngpu: []\n", "m.yaml:2: gpu: unknown key"},
        BadMachine{"driver-version: x\ngpus:\n  - {name: A100}\n", "m.yaml:3: gpus[0]: missing key uuid"},
        BadMachine{"driver-version: x\ngpus:\n  - {name: A, uuid: GPU-1, pci-bus-id: x, memory-mib: 1, "
                   "compute-capability: \"8.0\"}\n",
                   "gpus[0].uuid: must be GPU-"},
        BadMachine{"driver-version: x\ngpus:\n  - {name: A, uuid: GPU-11111111-2222-3333-4444-555555555555, "
                   "pci-bus-id: x, memory-mib: 0, compute-capability: \"8.0\"}\n",
                   "gpus[0].memory-mib: must be 1 to 16777216 MiB"},
        BadMachine{"driver-version: x\ngpus:\n  - {name: A, uuid: GPU-11111111-2222-3333-4444-555555555555, "
                   "pci-bus-id: x, memory-mib: 1, compute-capability: eight}\n",
                   "gpus[0].compute-capability: must be <major>.<minor>"},
        BadMachine{"driver-version: x\ngpus:\n  - {nme: A}\n", "gpus[0].nme: unknown key"},
        BadMachine{"driver-version: x\nprofile-sets:\n  p:\n    - {index: 0, id: 19, name: a, compute-slices: 1, "
                   "memory-slices: 4, memory-mib: 1, max: 1, placements: [6]}\ngpus: []\n",
                   "profile-sets.p[0].placements[0]: placement runs past the 8th memory slice"},
        BadMachine{"driver-version: x\nprofile-sets:\n  p:\n    - {index: 0, id: 19, name: a}\ngpus: []\n",
                   "profile-sets.p[0]: missing key compute-slices"},
        BadMachine{"driver-version: [x\n", "m.yaml:2:1: invalid YAML"}));

TEST(MalformedMachine, MigInstanceChecks) {
  struct Case {
    std::string mig;
    const char* expected;
  };
  const Case cases[] = {
      {", mig: {enabled: true, profiles: q}}\n", "gpus[0].mig.profiles: \"q\" is not defined under profile-sets"},
      {", mig: {enabled: false, profiles: p, instances: [{gi: 1, profile: 1g.5gb, start: 0, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}]}}\n",
       "gpus[0].mig.instances: MIG instances need enabled: true"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 2g.10gb, start: 0, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}]}}\n",
       "gpus[0].mig.instances[0].profile: \"2g.10gb\" is not a profile of this GPU"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 3g.20gb, start: 2, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}]}}\n",
       "gpus[0].mig.instances[0].start: is not a valid placement of 3g.20gb"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 3g.20gb, start: 4, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}, "
       "{gi: 2, profile: 1g.5gb, start: 5, uuid: MIG-11111111-2222-3333-4444-555555555556}]}}\n",
       "gpus[0].mig.instances[1].start: overlaps instance gi 1"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 1g.5gb, start: 4, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}, "
       "{gi: 1, profile: 1g.5gb, start: 5, uuid: MIG-11111111-2222-3333-4444-555555555556}]}}\n",
       "gpus[0].mig.instances[1].gi: GPU instance 1 is a 1g.5gb@4 already; entries with one gi are compute "
       "instances of one GPU instance"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 1c.3g.20gb, start: 4, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}, "
       "{gi: 1, profile: 2c.3g.20gb, start: 4, uuid: MIG-11111111-2222-3333-4444-555555555556}]}}\n",
       "gpus[0].mig.instances[1]: GPU instance 1 has no room left for a 2c.3g.20gb"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 1c.3g.20gb, start: 4, ci-start: 1, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}, "
       "{gi: 1, ci: 1, profile: 1c.3g.20gb, start: 4, ci-start: 1, uuid: "
       "MIG-11111111-2222-3333-4444-555555555556}]}}\n",
       "gpus[0].mig.instances[1].ci-start: overlaps another compute instance of this GPU instance"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 1c.3g.20gb, start: 4, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}, "
       "{gi: 1, profile: 1c.3g.20gb, start: 4, uuid: MIG-11111111-2222-3333-4444-555555555556}]}}\n",
       "gpus[0].mig.instances[1]: duplicate compute instance id 0"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 2c.3g.20gb, start: 4, ci-start: 1, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}]}}\n",
       "gpus[0].mig.instances[0].ci-start: is not a placement of 2c.3g.20gb"},
      {", mig: {enabled: true, profiles: p, instances: [{gi: 1, profile: 4c.3g.20gb, start: 4, uuid: "
       "MIG-11111111-2222-3333-4444-555555555555}]}}\n",
       "gpus[0].mig.instances[0].profile: \"4c.3g.20gb\" is not a profile of this GPU"},
      {", mig: {enabled: true}}\n", "gpus[0].mig: MIG mode needs profiles: <name under profile-sets>"},
  };
  for (const auto& c : cases) {
    auto m = load_simulated_machine_string(machine(std::string(kGpu) + c.mig), "m.yaml");
    ASSERT_FALSE(m) << c.mig;
    EXPECT_NE(m.error().message.find(c.expected), std::string::npos) << m.error().message;
  }
}

}  // namespace
}  // namespace gpufrac

namespace gpufrac {
namespace {

// A GPU instance split into compute instances (mig-parted, nvidia-smi mig -cci): one MIG device
// each, with its compute instance profile, placement and SMs; NVML answers compute instance
// profiles only for GI profiles with a GPU instance, so only 3g.20gb lists them.
TEST(Simulated, ComputeInstancesOfOneGpuInstance) {
  auto m = load_simulated_machine(kMachines + "a100-40gb-mig-ci.yaml");
  ASSERT_TRUE(m) << m.error().message;
  const Gpu& g = m->inventory.gpus[0];
  std::vector<std::string> got;
  for (const MigInstance& i : g.mig_instances)
    got.push_back(text::cat(i.gi_id, "/", i.ci_id, " ", mig_device_profile(g, i), "@", i.placement.start, ":",
                            i.ci_start, " ", i.multiprocessors, " SMs ", i.memory_bytes / kMiB, " MiB"));
  EXPECT_EQ(text::join(got, ", "),
            "1/0 1c.3g.20gb@4:0 14 SMs 19968 MiB, 1/1 1c.3g.20gb@4:1 14 SMs 19968 MiB, 1/2 1c.3g.20gb@4:2 14 SMs "
            "19968 MiB, 2/0 2c.3g.20gb@0:0 28 SMs 19968 MiB, 2/1 1c.3g.20gb@0:2 14 SMs 19968 MiB");
  for (const MigProfile& p : g.mig_profiles) EXPECT_EQ(p.compute_profiles.empty(), p.name != "3g.20gb") << p.name;
  const MigProfile* p3 = g.profile_by_name("3g.20gb");
  ASSERT_EQ(p3->compute_profiles.size(), 3u);
  EXPECT_EQ(p3->compute_profiles[1], (MigComputeProfile{1, 1, 2, 1, 28, {0}, 2}));
}

TEST(MalformedMachine, ComputeProfilesNeedTheFullSize) {
  const std::string yaml = R"(driver-version: "550.54.15"
profile-sets:
  p:
    - {index: 2, id: 9, name: 3g.20gb, compute-slices: 3, memory-slices: 4, memory-mib: 19968, max: 2, placements: [0, 4],
       compute-profiles: [{index: 0, id: 0, slices: 1, multiprocessors: 14, max: 3, placements: [0, 1, 2]}]}
gpus: [{name: A100, uuid: GPU-11111111-2222-3333-4444-555555555555, pci-bus-id: "0:7:0.0", memory-mib: 40536,
        compute-capability: "8.0", mig: {enabled: true, profiles: p}}]
)";
  auto m = load_simulated_machine_string(yaml, "m.yaml");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message,
            "m.yaml:5: profile-sets.p[0].compute-profiles: must include the full-size compute profile (slices: 3)");
  auto past = load_simulated_machine_string(
      std::string(yaml).replace(yaml.find("placements: [0, 1, 2]"), 21, "placements: [0, 1, 3]"), "m.yaml");
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().message,
            "m.yaml:5: profile-sets.p[0].compute-profiles[0].placements[2]: placement runs past the GPU instance's 3 "
            "compute slices");
}

}  // namespace
}  // namespace gpufrac
