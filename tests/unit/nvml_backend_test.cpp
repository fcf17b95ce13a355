// The real NVML backend (dlopen) over the fake libnvidia-ml.so.1: for every shipped machine it
// must read exactly what the simulated backend reads from the file, and fail in one clear line.
#include <dlfcn.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "nvml/discover.hpp"
#include "nvml/nvml_backend.hpp"
#include "nvml/nvml_detail.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";
const std::string kFake = GPUFRAC_FAKE_NVML;
const std::string kFakePartial = GPUFRAC_FAKE_NVML_PARTIAL;
constexpr const char* kMachineEnv = "GPUFRAC_FAKE_NVML_MACHINE";

std::string temp_dir() {
  char tmpl[] = "/tmp/gpufrac-nvml-XXXXXX";
  return ::mkdtemp(tmpl);
}

class NvmlBackend : public ::testing::Test {
 protected:
  void TearDown() override {
    ::unsetenv(kMachineEnv);
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }
  std::string temp_dir() { return dirs_.emplace_back(gpufrac::temp_dir()); }

  // Discovers `machine` with both backends over the same simulated host root.
  std::pair<Inventory, Inventory> both(const std::string& machine, const std::string& library = kFake) {
    auto m = load_simulated_machine(machine);
    EXPECT_TRUE(m) << m.error().message;
    Config sim = default_config();
    sim.state_dir = temp_dir();
    sim.host_root = sim.state_dir + "/root";
    EXPECT_TRUE(write_simulated_host_root(*m, sim.host_root, false));
    sim.nvml.backend = gpufrac::NvmlBackend::simulated;
    sim.nvml.machine = machine;
    sim.driver.inject = gpufrac::DriverInject::never;  // NVML's view only (driver files: driver_discovery_test)
    Config real = sim;
    real.nvml.backend = gpufrac::NvmlBackend::nvml;
    real.nvml.library = library;
    ::setenv(kMachineEnv, machine.c_str(), 1);
    auto a = discover(sim);
    auto b = discover(real);
    EXPECT_TRUE(a) << a.error().message;
    EXPECT_TRUE(b) << b.error().message;
    if (!a || !b) return {};
    return {std::move(*a), std::move(*b)};
  }

  std::vector<std::string> dirs_;  // removed after each test
};

TEST_F(NvmlBackend, EveryShippedMachineReadsAsTheSimulatedOne) {
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(kMachines)) {
    auto [sim, real] = both(e.path());
    EXPECT_TRUE(real.same_hardware(sim)) << e.path() << "\nnvml:      " << to_json(real).dump()
                                         << "\nsimulated: " << to_json(sim).dump();
    EXPECT_EQ(real.source, "nvml:" + kFake);
    EXPECT_FALSE(real.gpus.empty()) << e.path();
    ++count;
  }
  EXPECT_EQ(count, 9);
}

TEST_F(NvmlBackend, ReadsMigInstancesProfilesAndUuids) {
  auto [sim, real] = both(kMachines + "a100-80gb-mig.yaml");
  ASSERT_EQ(real.gpus.size(), 1u);
  const Gpu& g = real.gpus[0];
  EXPECT_EQ(real.driver_version, "550.54.15");
  EXPECT_EQ(g.uuid, "GPU-0503783c-98ec-041d-cab1-624a56556d11");
  EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.pci_bus_id, "00000000:07:00.0");
  EXPECT_EQ(g.memory_bytes, 81920 * kMiB);
  EXPECT_EQ(g.cc_major, 8);
  EXPECT_TRUE(g.mig_capable && g.mig_enabled && g.mig_pending);
  std::vector<std::string> names;
  for (const auto& p : g.mig_profiles) names.push_back(p.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}));
  EXPECT_EQ(g.mig_profiles[2].placement_starts, (std::vector<std::uint32_t>{0, 2, 4, 6}));
  EXPECT_EQ(g.mig_profiles[2].memory_slices, 2u);
  ASSERT_EQ(g.mig_instances.size(), 4u);
  const MigInstance& m = g.mig_instances[0];
  EXPECT_EQ(m.gi_id, 1u);
  EXPECT_EQ(m.ci_id, 0u);
  EXPECT_EQ(m.profile_id, 9u);
  EXPECT_EQ(m.profile_name, "3g.40gb");
  EXPECT_EQ(m.uuid, "MIG-4abe8dfe-56e0-1af9-c15d-053625ecbfe1");
  EXPECT_EQ(m.memory_bytes, 40192 * kMiB);
  EXPECT_EQ(m.placement, (MigPlacement{4, 4}));
  EXPECT_EQ(m.compute_slices, 3u);
  EXPECT_EQ(g.mig_instances[3].gi_id, 10u);
  EXPECT_EQ(g.mig_instances[3].uuid, "MIG-6ab7d7ee-fc32-0d24-eb1d-a652742cd522");
}

TEST_F(NvmlBackend, MigCapableGpuWithMigOffListsNoProfiles) {
  auto [sim, real] = both(kMachines + "dgx-8gpu-mixed.yaml");
  ASSERT_EQ(real.gpus.size(), 8u);
  EXPECT_TRUE(real.gpus[0].mig_capable);
  EXPECT_FALSE(real.gpus[0].mig_enabled);
  EXPECT_TRUE(real.gpus[0].mig_profiles.empty());
  EXPECT_EQ(real.gpus[7].mig_profiles.size(), 7u);
  EXPECT_TRUE(real.gpus[7].mig_instances.empty());
  EXPECT_EQ(real.gpus[6].mig_instances.size(), 7u);
}

// Instances out of GI order and a non-zero CI id in the file; profiles in index order.
constexpr const char* kShuffled = R"(driver-version: "535.104.05"
profile-sets:
  p:
    - {index: 0, id: 19, name: 1g.5gb, compute-slices: 1, memory-slices: 1, memory-mib: 4864, max: 7, placements: [6, 0, 1, 2, 3, 4, 5]}
    - {index: 2, id: 9, name: 3g.20gb, compute-slices: 3, memory-slices: 4, memory-mib: 19968, max: 2, placements: [4, 0]}
    - {index: 7, id: 20, name: 1g.5gb+me, compute-slices: 1, memory-slices: 1, memory-mib: 4864, max: 1, placements: [0, 1, 2, 3, 4, 5, 6]}
gpus:
  - name: NVIDIA A100-SXM4-40GB
    uuid: GPU-11111111-2222-3333-4444-555555555555
    pci-bus-id: "00000000:3B:00.0"
    minor: 3
    memory-mib: 40536
    compute-capability: "8.0"
    mig:
      enabled: true
      profiles: p
      instances:
        - {gi: 9, ci: 2, profile: 1g.5gb, start: 1, uuid: MIG-11111111-2222-3333-4444-000000000009}
        - {gi: 2, ci: 0, profile: 3g.20gb, start: 4, uuid: MIG-11111111-2222-3333-4444-000000000002}
        - {gi: 5, ci: 0, profile: 1g.5gb+me, start: 0, uuid: MIG-11111111-2222-3333-4444-000000000005}
)";

TEST_F(NvmlBackend, OrderDoesNotDependOnTheFile) {
  std::string file = temp_dir() + "/shuffled.yaml";
  std::ofstream(file) << kShuffled;
  auto [sim, real] = both(file);
  EXPECT_TRUE(real.same_hardware(sim)) << to_json(real).dump() << "\n" << to_json(sim).dump();
  ASSERT_EQ(real.gpus.size(), 1u);
  const Gpu& g = real.gpus[0];
  EXPECT_EQ(g.minor, 3u);
  ASSERT_EQ(g.mig_instances.size(), 3u);
  EXPECT_EQ(g.mig_instances[0].gi_id, 2u);
  EXPECT_EQ(g.mig_instances[1].gi_id, 5u);
  EXPECT_EQ(g.mig_instances[2].gi_id, 9u);
  EXPECT_EQ(g.mig_instances[2].ci_id, 2u);
  ASSERT_EQ(g.mig_profiles.size(), 3u);
  EXPECT_EQ(g.mig_profiles[1].name, "1g.5gb+me");
  EXPECT_EQ(g.mig_profiles[0].placement_starts, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST_F(NvmlBackend, MissingLibraryIsOneLine) {
  auto inv = discover_nvml("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message,
            "NVIDIA driver library /nonexistent/libnvidia-ml.so.1 was not found (is the NVIDIA driver installed?); "
            "use --machine FILE for a simulated machine");
  EXPECT_EQ(inv.error().exit_code(), 2);
  if (void* real = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    ::dlclose(real);
    GTEST_SKIP() << "this host has an NVIDIA driver library";
  }
  auto by_name = discover_nvml("libnvidia-ml.so.1");
  if (by_name) GTEST_SKIP() << "this host has an NVIDIA driver library";
  EXPECT_EQ(by_name.error().message,
            "NVIDIA driver library libnvidia-ml.so.1 was not found (is the NVIDIA driver installed?); "
            "use --machine FILE for a simulated machine");
}

TEST_F(NvmlBackend, LibraryWithoutNvmlNamesTheMissingSymbol) {
  auto inv = discover_nvml("libc.so.6");
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message,
            "NVIDIA driver library libc.so.6 lacks nvmlInit_v2, which gpufrac needs (driver too old or not an NVML "
            "library); use --machine FILE for a simulated machine");
}

TEST_F(NvmlBackend, InitFailureNamesTheNvmlError) {
  ::unsetenv(kMachineEnv);  // the fake then answers as a host without the kernel module
  auto inv = discover_nvml(kFake);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "NVML could not be initialised through " + kFake +
                                     ": Driver Not Loaded (9); check that the NVIDIA kernel module is loaded "
                                     "(nvidia-smi should work), or use --machine FILE for a simulated machine");
}

TEST_F(NvmlBackend, OptionalSymbolsMayBeMissing) {
  // No nvmlDeviceGetMemoryInfo_v2: memory comes from the v1 call; MIG off needs no MIG calls.
  auto [sim, real] = both(kMachines + "a100-40gb-x2.yaml", kFakePartial);
  EXPECT_TRUE(real.same_hardware(sim)) << to_json(real).dump();
  ASSERT_EQ(real.gpus.size(), 2u);
  EXPECT_EQ(real.gpus[1].memory_bytes, 40536 * kMiB);
}

TEST_F(NvmlBackend, MemoryLimitsFollowTheDriverAndTheLibrarysSymbols) {
  auto [sim, real] = both(kMachines + "h100-80gb-x3-r615.yaml");
  for (const auto& g : real.gpus) EXPECT_TRUE(g.memory_limits) << "r615: GPU " << g.index;
  EXPECT_TRUE(real.same_hardware(sim));
  auto [sim550, real550] = both(kMachines + "a100-40gb-x2.yaml");
  for (const auto& g : real550.gpus) EXPECT_FALSE(g.memory_limits) << "r550 answers FUNCTION_NOT_FOUND";
  // A library without the calls (an older driver's): none, and not an error.
  auto [sim_partial, partial] = both(kMachines + "a100-40gb-x2.yaml", kFakePartial);
  for (const auto& g : partial.gpus) EXPECT_FALSE(g.memory_limits);
  void* lib = ::dlopen(kFakePartial.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(::dlsym(lib, "nvmlDeviceSetMemoryLimits_v1"), nullptr);
  EXPECT_EQ(::dlsym(lib, "nvmlDeviceGetMemoryLimits_v1"), nullptr);
  ::dlclose(lib);
}

TEST_F(NvmlBackend, MigGpuNeedsEveryMigSymbol) {
  ::setenv(kMachineEnv, (kMachines + "a100-80gb-mig.yaml").c_str(), 1);
  auto inv = discover_nvml(kFakePartial);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "NVML discovery through " + kFakePartial + ": GPU 0: NVIDIA driver library " +
                                     kFakePartial +
                                     " lacks nvmlDeviceGetMigDeviceHandleByIndex, which a GPU in MIG mode needs; "
                                     "update the driver");
}

TEST(NvmlNames, ProfileNamesFollowGoNvlib) {
  using nvml::gi_profile_name;
  const std::uint64_t a100_80 = 81920 * kMiB, a100_40 = 40536 * kMiB, h100 = 81559 * kMiB, a30 = 24258 * kMiB;
  EXPECT_EQ(gi_profile_name(0x0, 1, 9728, a100_80), "1g.10gb");
  EXPECT_EQ(gi_profile_name(0x7, 1, 9728, a100_80), "1g.10gb+me");
  EXPECT_EQ(gi_profile_name(0x9, 1, 19968, a100_80), "1g.20gb");
  EXPECT_EQ(gi_profile_name(0x4, 7, 81152, a100_80), "7g.80gb");
  EXPECT_EQ(gi_profile_name(0x0, 1, 4864, a100_40), "1g.5gb");
  EXPECT_EQ(gi_profile_name(0x2, 3, 19968, a100_40), "3g.20gb");
  EXPECT_EQ(gi_profile_name(0x4, 7, 40192, a100_40), "7g.40gb");
  EXPECT_EQ(gi_profile_name(0x2, 3, 40448, h100), "3g.40gb");
  EXPECT_EQ(gi_profile_name(0x3, 4, 24000, a30), "4g.24gb");
  EXPECT_EQ(gi_profile_name(0x0, 1, 5952, a30), "1g.6gb");
  EXPECT_EQ(gi_profile_name(0xD, 1, 5952, a30), "1g.6gb-me");
  EXPECT_EQ(gi_profile_name(0xF, 1, 5952, a30), "1g.6gb+me.all");
  EXPECT_EQ(gi_profile_name(0xB, 2, 11968, a30), "2g.12gb+gfx");
}

// The same figures are static_asserts in nvml_api.hpp; here they show in the test report.
TEST(NvmlAbi, StructLayoutsMatchNvml) {
  EXPECT_EQ(sizeof(nvmlMemory_t), 24u);
  EXPECT_EQ(sizeof(nvmlMemory_v2_t), 40u);
  EXPECT_EQ(nvmlMemory_v2, 0x02000028u);
  EXPECT_EQ(sizeof(nvmlPciInfo_t), 68u);
  EXPECT_EQ(sizeof(nvmlProcessInfo_t), 24u);
  EXPECT_EQ(sizeof(nvmlProcessInfo_535_43_t), 32u);
  EXPECT_EQ(sizeof(nvmlGpuInstancePlacement_t), 8u);
  EXPECT_EQ(sizeof(nvmlGpuInstanceProfileInfo_t), 48u);
  EXPECT_EQ(offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB), 40u);
  EXPECT_EQ(sizeof(nvmlGpuInstanceInfo_t), 24u);
  EXPECT_EQ(sizeof(nvmlComputeInstanceProfileInfo_t), 36u);
  EXPECT_EQ(sizeof(nvmlComputeInstanceInfo_t), 32u);
}

TEST(NvmlNames, ProcessInfoSizeFollowsTheDriver) {
  EXPECT_EQ(nvml::nvml_process_info_size("550.54.15"), 24u);
  EXPECT_EQ(nvml::nvml_process_info_size("530.41.03"), 24u);
  EXPECT_EQ(nvml::nvml_process_info_size("535.43.02"), 32u);
  EXPECT_EQ(nvml::nvml_process_info_size("535.86.05"), 32u);
  EXPECT_EQ(nvml::nvml_process_info_size("535.98"), 24u);
  EXPECT_EQ(nvml::nvml_process_info_size("535.104.05"), 24u);
  EXPECT_EQ(nvml::nvml_process_info_size("unknown"), 24u);
}

}  // namespace
}  // namespace gpufrac
