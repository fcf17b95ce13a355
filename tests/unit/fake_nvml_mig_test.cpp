// MIG creation and destruction in the fake libnvidia-ml.so.1: the driver's placement rules, the
// MIG user guide's failing order under the driver's own placement, ids, in-use refusals and the
// state file shared between processes.
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/inventory/inventory.hpp"
#include "nvml/nvml_api.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";

#define NVML(name) fn<decltype(&::name)>(#name)

class FakeNvmlMig : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = ::dlopen(GPUFRAC_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
  }
  void TearDown() override {
    while (NVML(nvmlShutdown)() == NVML_SUCCESS) {
    }
    ::dlclose(handle_);
    for (const char* v : {"GPUFRAC_FAKE_NVML_MACHINE", "GPUFRAC_FAKE_NVML_STATE", "GPUFRAC_FAKE_NVML_BUSY"})
      ::unsetenv(v);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  template <class Fn>
  Fn fn(const char* name) {
    auto f = reinterpret_cast<Fn>(::dlsym(handle_, name));
    EXPECT_NE(f, nullptr) << name;
    return f;
  }
  nvmlDevice_t init(const std::string& machine) {
    ::setenv("GPUFRAC_FAKE_NVML_MACHINE", (kMachines + machine).c_str(), 1);
    EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(0, &d), NVML_SUCCESS);
    return d;
  }
  nvmlReturn_t create(nvmlDevice_t d, unsigned profile_id, unsigned start, nvmlGpuInstance_t* gi = nullptr) {
    nvmlGpuInstance_t tmp = nullptr;
    nvmlGpuInstancePlacement_t pl{start, size_of(profile_id)};
    return NVML(nvmlDeviceCreateGpuInstanceWithPlacement)(d, profile_id, &pl, gi ? gi : &tmp);
  }
  static unsigned size_of(unsigned profile_id) {  // memory slices of the 8-slice table's profiles
    switch (profile_id) {
      case 15:
      case 14:
        return 2;
      case 9:
      case 5:
        return 4;
      case 0:
        return 8;
      default:
        return 1;
    }
  }
  nvmlGpuInstanceInfo_t info(nvmlGpuInstance_t gi) {
    nvmlGpuInstanceInfo_t i{};
    EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(gi, &i), NVML_SUCCESS);
    return i;
  }
  void* handle_ = nullptr;
  std::string dir_;
};

TEST_F(FakeNvmlMig, DriverPlacementStrandsTheGuidesThreeG) {
  nvmlDevice_t d = init("a100-40gb-mig-empty.yaml");
  unsigned starts[3];
  const unsigned ids[] = {19, 19, 14};
  for (int i = 0; i < 3; ++i) {
    nvmlGpuInstance_t gi = nullptr;
    ASSERT_EQ(NVML(nvmlDeviceCreateGpuInstance)(d, ids[i], &gi), NVML_SUCCESS);
    starts[i] = info(gi).placement.start;
  }
  EXPECT_EQ(starts[0], 6u);
  EXPECT_EQ(starts[1], 5u);
  EXPECT_EQ(starts[2], 2u);
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceCreateGpuInstance)(d, 9, &gi), NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_STREQ(NVML(nvmlErrorString)(NVML_ERROR_INSUFFICIENT_RESOURCES), "Insufficient Resources");
}

TEST_F(FakeNvmlMig, DriverPlacementWithThreeGFirstSucceeds) {
  nvmlDevice_t d = init("a100-40gb-mig-empty.yaml");
  for (unsigned id : {9u, 19u, 14u, 19u}) {
    nvmlGpuInstance_t gi = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceCreateGpuInstance)(d, id, &gi), NVML_SUCCESS) << id;
  }
}

TEST_F(FakeNvmlMig, PlacementRules) {
  nvmlDevice_t d = init("a100-40gb-mig-empty.yaml");
  EXPECT_EQ(create(d, 19, 0), NVML_SUCCESS);
  EXPECT_EQ(create(d, 19, 1), NVML_SUCCESS);
  EXPECT_EQ(create(d, 14, 2), NVML_SUCCESS);
  EXPECT_EQ(create(d, 9, 4), NVML_SUCCESS);
  EXPECT_EQ(create(d, 19, 4), NVML_ERROR_INSUFFICIENT_RESOURCES);  // overlaps 3g@4
  EXPECT_EQ(create(d, 14, 1), NVML_ERROR_INVALID_ARGUMENT);        // not a 2g placement
  nvmlGpuInstancePlacement_t wrong{0, 3};
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceCreateGpuInstanceWithPlacement)(d, 19, &wrong, &gi), NVML_ERROR_INVALID_ARGUMENT);
  unsigned count = 9;
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceRemainingCapacity)(d, 19, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
}

TEST_F(FakeNvmlMig, MaxCountAndComputeSlices) {
  nvmlDevice_t d = init("a100-40gb-mig-empty.yaml");
  EXPECT_EQ(create(d, 20, 0), NVML_SUCCESS);  // 1g.5gb+me: one per GPU
  EXPECT_EQ(create(d, 20, 1), NVML_ERROR_INSUFFICIENT_RESOURCES);
  unsigned count = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceRemainingCapacity)(d, 19, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 6u);
  EXPECT_EQ(create(d, 5, 0), NVML_ERROR_INSUFFICIENT_RESOURCES);  // 4g@0 overlaps slice 0
  EXPECT_EQ(create(d, 9, 4), NVML_SUCCESS);                       // 3 + 1 compute slices
  EXPECT_EQ(create(d, 14, 2), NVML_SUCCESS);                      // 6
  EXPECT_EQ(create(d, 19, 1), NVML_SUCCESS);                      // 7: the GPU's compute slices are all used
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceRemainingCapacity)(d, 19, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
}

TEST_F(FakeNvmlMig, ComputeInstancesIdsAndDestroyOrder) {
  nvmlDevice_t d = init("h100-80gb-mig-empty.yaml");
  nvmlGpuInstance_t a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(create(d, 19, 0, &a), NVML_SUCCESS);
  ASSERT_EQ(create(d, 19, 1, &b), NVML_SUCCESS);
  ASSERT_EQ(create(d, 9, 4, &c), NVML_SUCCESS);
  EXPECT_EQ(info(a).id, 1u);
  EXPECT_EQ(info(c).id, 3u);
  ASSERT_EQ(NVML(nvmlGpuInstanceDestroy)(b), NVML_SUCCESS);
  EXPECT_EQ(create(d, 19, 2, &b), NVML_SUCCESS);
  EXPECT_EQ(info(b).id, 2u);  // the smallest free id again
  unsigned left = 0;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(c, 2, &left), NVML_SUCCESS);
  EXPECT_EQ(left, 1u);
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(NVML(nvmlGpuInstanceCreateComputeInstance)(c, 2, &ci), NVML_SUCCESS);  // 3 slices: full size
  EXPECT_EQ(NVML(nvmlGpuInstanceCreateComputeInstance)(c, 2, &ci), NVML_ERROR_INSUFFICIENT_RESOURCES);
  nvmlComputeInstanceInfo_t ci_info{};
  ASSERT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(ci, &ci_info), NVML_SUCCESS);
  EXPECT_EQ(ci_info.id, 0u);
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(d, 4, &mig), NVML_SUCCESS);  // slot = the GI's first slice
  char uuid[96] = {};
  ASSERT_EQ(NVML(nvmlDeviceGetUUID)(mig, uuid, sizeof uuid), NVML_SUCCESS);
  EXPECT_EQ(std::string(uuid).size(), 40u);
  EXPECT_EQ(std::string(uuid).substr(0, 4), "MIG-");
  EXPECT_EQ(NVML(nvmlGpuInstanceDestroy)(c), NVML_ERROR_IN_USE);  // its compute instance first
  ::setenv("GPUFRAC_FAKE_NVML_BUSY", uuid, 1);
  EXPECT_EQ(NVML(nvmlComputeInstanceDestroy)(ci), NVML_ERROR_IN_USE);  // processes run on it
  ::unsetenv("GPUFRAC_FAKE_NVML_BUSY");
  EXPECT_EQ(NVML(nvmlComputeInstanceDestroy)(ci), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(d, 4, &mig), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlGpuInstanceDestroy)(c), NVML_SUCCESS);
  nvmlGpuInstanceInfo_t gone{};
  EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(c, &gone), NVML_ERROR_INVALID_ARGUMENT);
}

// Compute instances of several sizes in one GPU instance, from the machine file's compute-profiles
// (A100 3g: 1c x3 at 0-2, 2c at 0, 3c at 0): profile info by NVML index, every placement listed,
// creation at a placement or the lowest free one, INSUFFICIENT_RESOURCES (23) for an occupied
// placement or a full count, INVALID_ARGUMENT for a start the profile lacks.
TEST_F(FakeNvmlMig, ComputeInstancesShareAGpuInstance) {
  nvmlDevice_t d = init("a100-40gb-mig-empty.yaml");
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(create(d, 9, 4, &gi), NVML_SUCCESS);
  nvmlComputeInstanceProfileInfo_t p{};
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceProfileInfo)(gi, 1, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &p),
            NVML_SUCCESS);
  EXPECT_EQ(std::to_string(p.id) + " " + std::to_string(p.sliceCount) + " " + std::to_string(p.instanceCount) + " " +
                std::to_string(p.multiprocessorCount) + " " + std::to_string(p.sharedCopyEngineCount),
            "1 2 1 28 3");
  EXPECT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceProfileInfo)(gi, 3, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &p),
            NVML_ERROR_NOT_SUPPORTED);  // 4 slices: not in a 3-slice GPU instance
  unsigned count = 0;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(gi, 0, nullptr, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  nvmlComputeInstancePlacement_t pl[3]{};
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(gi, 0, pl, &count), NVML_SUCCESS);
  EXPECT_EQ(pl[2].start, 2u);
  EXPECT_EQ(pl[2].size, 1u);
  auto at = [&](unsigned profile, unsigned start, nvmlComputeInstance_t* out) {
    nvmlComputeInstancePlacement_t where{start, profile + 1};
    return NVML(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(gi, profile, &where, out);
  };
  nvmlComputeInstance_t one = nullptr, two = nullptr, three = nullptr;
  ASSERT_EQ(at(0, 2, &one), NVML_SUCCESS);
  EXPECT_EQ(at(1, 1, &two), NVML_ERROR_INVALID_ARGUMENT);  // 2c starts at 0 only
  ASSERT_EQ(at(1, 0, &two), NVML_SUCCESS);                 // 2c + 1c: the guide's example
  EXPECT_EQ(at(0, 0, &three), NVML_ERROR_INSUFFICIENT_RESOURCES);
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(gi, 0, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  ASSERT_EQ(NVML(nvmlComputeInstanceDestroy)(two), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(gi, 0, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  ASSERT_EQ(NVML(nvmlGpuInstanceCreateComputeInstance)(gi, 0, &three), NVML_SUCCESS);  // the lowest free: 0
  nvmlComputeInstanceInfo_t i{};
  ASSERT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(three, &i), NVML_SUCCESS);
  EXPECT_EQ(i.placement.start, 0u);
  EXPECT_EQ(i.profileId, 0u);
  ASSERT_EQ(NVML(nvmlGpuInstanceCreateComputeInstance)(gi, 0, &two), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpuInstanceCreateComputeInstance)(gi, 0, &two), NVML_ERROR_INSUFFICIENT_RESOURCES);
  nvmlComputeInstance_t list[3];
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstances)(gi, 0, list, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(NVML(nvmlGpuInstanceDestroy)(gi), NVML_ERROR_IN_USE);
}

TEST_F(FakeNvmlMig, NoChangeWhileMigIsOff) {
  nvmlDevice_t d = init("a100-40gb-x1.yaml");
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceCreateGpuInstance)(d, 19, &gi), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(FakeNvmlMig, StateFileIsSharedBetweenProcesses) {
  char tmpl[] = "/tmp/gpufrac-fake-state-XXXXXX";
  dir_ = ::mkdtemp(tmpl);
  ::setenv("GPUFRAC_FAKE_NVML_STATE", (dir_ + "/state.json").c_str(), 1);
  nvmlDevice_t d = init("h100-80gb-mig-empty.yaml");
  nvmlGpuInstance_t mine = nullptr;
  ASSERT_EQ(create(d, 19, 0, &mine), NVML_SUCCESS);
  const pid_t child = ::fork();
  if (child == 0) {  // another process: sees the instance, adds one
    nvmlGpuInstance_t gi = nullptr;
    nvmlGpuInstancePlacement_t pl{1, 1};
    unsigned count = 0;
    nvmlGpuInstance_t list[7];
    bool ok = NVML(nvmlDeviceGetGpuInstances)(d, 19, list, &count) == NVML_SUCCESS && count == 1 &&
              NVML(nvmlDeviceCreateGpuInstanceWithPlacement)(d, 19, &pl, &gi) == NVML_SUCCESS;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  unsigned count = 0;
  nvmlGpuInstance_t list[7];
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstances)(d, 19, list, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(info(mine).placement.start, 0u);  // this process's handle is still good
  EXPECT_EQ(create(d, 19, 1), NVML_ERROR_INSUFFICIENT_RESOURCES);
  // A new init (another program) starts from the file, not from the machine.
  while (NVML(nvmlShutdown)() == NVML_SUCCESS) {
  }
  d = init("h100-80gb-mig-empty.yaml");
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstances)(d, 19, list, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
}

}  // namespace
}  // namespace gpufrac
