// The fake libnvidia-ml.so.1 keeps NVML's ABI and error rules: what the real backend and the
// memory-limit shim rely on when they run against it.
#include <dlfcn.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "core/inventory/inventory.hpp"
#include "nvml/nvml_api.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";
constexpr const char* kMachineEnv = "GPUFRAC_FAKE_NVML_MACHINE";

// Looks up an exported function of the fake with its declared type.
#define NVML(name) fn<decltype(&::name)>(#name)

// The fake, loaded for one test, with nvmlInit_v2 done on `machine`.
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = ::dlopen(GPUFRAC_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
  }
  void TearDown() override {
    while (fn<decltype(&::nvmlShutdown)>("nvmlShutdown")() == NVML_SUCCESS) {
    }
    ::dlclose(handle_);
    ::unsetenv(kMachineEnv);
  }
  template <class Fn>
  Fn fn(const char* name) {
    auto f = reinterpret_cast<Fn>(::dlsym(handle_, name));
    EXPECT_NE(f, nullptr) << name;
    return f;
  }
  nvmlReturn_t init(const std::string& machine) {
    ::setenv(kMachineEnv, (kMachines + machine).c_str(), 1);
    return fn<decltype(&::nvmlInit_v2)>("nvmlInit_v2")();
  }
  nvmlDevice_t device(unsigned int index) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(index, &d), NVML_SUCCESS);
    return d;
  }
  void* handle_ = nullptr;
};

TEST_F(FakeNvml, OnlyNvmlNamesAreExported) {
  EXPECT_EQ(::dlsym(handle_, "_ZN7gpufrac9fake_nvml6globalEv"), nullptr);
  EXPECT_EQ(
      ::dlsym(handle_, "_ZN7gpufrac22load_simulated_machineERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"),
      nullptr);
  EXPECT_NE(::dlsym(handle_, "nvmlDeviceGetComputeRunningProcesses_v3"), nullptr);
  EXPECT_NE(::dlsym(handle_, "nvmlInitWithFlags"), nullptr);
}

TEST_F(FakeNvml, MemoryInfoV2ChecksTheStructVersion) {
  ASSERT_EQ(init("a100-40gb-x1.yaml"), NVML_SUCCESS);
  nvmlMemory_v2_t mem{};
  mem.version = 2;  // the classic mistake: the struct version is NVML_STRUCT_VERSION(40, 2)
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(device(0), &mem), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  mem.version = 0x02000028;
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(device(0), &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.total, 40536 * kMiB);
  EXPECT_EQ(mem.free, 40536 * kMiB);
  nvmlMemory_t v1{};
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(device(0), &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.total, 40536 * kMiB);
  EXPECT_STREQ(NVML(nvmlErrorString)(NVML_ERROR_ARGUMENT_VERSION_MISMATCH), "Argument version mismatch");
}

TEST_F(FakeNvml, StringsNeedRoomForTheirNul) {
  ASSERT_EQ(init("a100-40gb-x1.yaml"), NVML_SUCCESS);
  const std::string uuid = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  EXPECT_EQ(NVML(nvmlDeviceGetUUID)(device(0), buf, static_cast<unsigned>(uuid.size())), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(NVML(nvmlDeviceGetUUID)(device(0), buf, static_cast<unsigned>(uuid.size() + 1)), NVML_SUCCESS);
  EXPECT_EQ(buf, uuid);
  EXPECT_EQ(NVML(nvmlSystemGetDriverVersion)(buf, 4), NVML_ERROR_INSUFFICIENT_SIZE);
  nvmlPciInfo_t pci{};
  ASSERT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(device(0), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:07:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:07:00.0");
  EXPECT_EQ(pci.bus, 7u);
}

TEST_F(FakeNvml, InitIsCountedAndTheMachineIsReadAgainAfterShutdown) {
  unsigned int count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(init("a100-40gb-x1.yaml"), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlInitWithFlags)(0), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);  // one init still open
  EXPECT_EQ(count, 1u);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(init("dgx-8gpu-mixed.yaml"), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 8u);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(8, &d), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMinorNumber)(reinterpret_cast<nvmlDevice_t>(&count), &count),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvml, MigQueriesOnGpusWithoutMig) {
  std::string file = ::testing::TempDir() + "/no-mig.yaml";
  std::ofstream(file)
      << "driver-version: \"550.54.15\"\ngpus:\n  - {name: Tesla T4, uuid: "
         "GPU-11111111-2222-3333-4444-555555555555, pci-bus-id: \"00000000:3B:00.0\", memory-mib: 15360, "
         "compute-capability: \"7.5\"}\n";
  ::setenv(kMachineEnv, file.c_str(), 1);
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  unsigned int current = 9, pending = 9, count = 0;
  nvmlGpuInstanceProfileInfo_t info{};
  EXPECT_EQ(NVML(nvmlDeviceGetMigMode)(device(0), &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(device(0), 0, &info), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(device(0), &count), NVML_ERROR_NOT_SUPPORTED);
  // MIG-capable, MIG off: the mode answers, the profiles do not (as nvml.h documents).
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  ASSERT_EQ(init("a100-40gb-x1.yaml"), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetMigMode)(device(0), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 0u);
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(device(0), 0, &info), NVML_ERROR_NOT_SUPPORTED);
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(device(0), 0, &mig), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(FakeNvml, ProfilesAndPlacements) {
  ASSERT_EQ(init("a100-80gb-mig.yaml"), NVML_SUCCESS);
  nvmlGpuInstanceProfileInfo_t info{};
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(device(0), 0x9, &info), NVML_SUCCESS);
  EXPECT_EQ(info.id, 15u);
  EXPECT_EQ(info.sliceCount, 1u);
  EXPECT_EQ(info.instanceCount, 4u);
  EXPECT_EQ(info.memorySizeMB, 19968u);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(device(0), 0x5, &info), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(device(0), 0x12, &info), NVML_ERROR_INVALID_ARGUMENT);
  auto placements = NVML(nvmlDeviceGetGpuInstancePossiblePlacements_v2);
  unsigned int count = 0;
  ASSERT_EQ(placements(device(0), 19, nullptr, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 7u);
  nvmlGpuInstancePlacement_t pl[7] = {};
  count = 1;
  EXPECT_EQ(placements(device(0), 19, pl, &count), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 7u);
  ASSERT_EQ(placements(device(0), 9, pl, &count), NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(pl[1].start, 4u);
  EXPECT_EQ(pl[1].size, 4u);
  EXPECT_EQ(placements(device(0), 42, pl, &count), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvml, GpuAndComputeInstances) {
  ASSERT_EQ(init("a100-80gb-mig.yaml"), NVML_SUCCESS);
  nvmlGpuInstance_t gis[2] = {};
  unsigned int count = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstances)(device(0), 9, gis, &count), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  nvmlGpuInstanceInfo_t gi{};
  ASSERT_EQ(NVML(nvmlGpuInstanceGetInfo)(gis[0], &gi), NVML_SUCCESS);
  EXPECT_EQ(gi.device, device(0));
  EXPECT_EQ(gi.id, 1u);
  EXPECT_EQ(gi.placement.start, 4u);
  auto ci_profile = NVML(nvmlGpuInstanceGetComputeInstanceProfileInfo);
  nvmlComputeInstanceProfileInfo_t cp{};
  ASSERT_EQ(ci_profile(gis[0], 0, 0, &cp), NVML_SUCCESS);
  EXPECT_EQ(cp.instanceCount, 3u);
  EXPECT_EQ(cp.multiprocessorCount, 14u);
  EXPECT_EQ(ci_profile(gis[0], 3, 0, &cp), NVML_ERROR_NOT_SUPPORTED);  // 4 slices in a 3g instance
  EXPECT_EQ(ci_profile(gis[0], 9, 0, &cp), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(ci_profile(gis[0], 2, 0, &cp), NVML_SUCCESS);
  nvmlComputeInstance_t cis[1] = {};
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstances)(gis[0], cp.id, cis, &count), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  nvmlComputeInstanceInfo_t ci{};
  ASSERT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(cis[0], &ci), NVML_SUCCESS);
  EXPECT_EQ(ci.gpuInstance, gis[0]);
  EXPECT_EQ(ci.id, 0u);
  EXPECT_EQ(ci.placement.size, 3u);
}

TEST_F(FakeNvml, MigDeviceHandles) {
  ASSERT_EQ(init("a100-80gb-mig.yaml"), NVML_SUCCESS);
  unsigned int max = 0, id = 9;
  ASSERT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(device(0), &max), NVML_SUCCESS);
  EXPECT_EQ(max, 7u);
  auto by_index = NVML(nvmlDeviceGetMigDeviceHandleByIndex);
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(by_index(device(0), 1, &mig), NVML_ERROR_NOT_FOUND);  // slots follow placement starts 4, 0, 3, 2
  EXPECT_EQ(by_index(device(0), 7, &mig), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(by_index(device(0), 4, &mig), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(mig, &id), NVML_SUCCESS);
  EXPECT_EQ(id, 1u);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(device(0), &id), NVML_ERROR_NOT_SUPPORTED);
  nvmlDevice_t by_uuid = nullptr, parent = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetHandleByUUID)("MIG-4abe8dfe-56e0-1af9-c15d-053625ecbfe1", &by_uuid), NVML_SUCCESS);
  EXPECT_EQ(by_uuid, mig);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByUUID)("GPU-00000000-0000-0000-0000-000000000000", &by_uuid),
            NVML_ERROR_NOT_FOUND);
  ASSERT_EQ(NVML(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(mig, &parent), NVML_SUCCESS);
  EXPECT_EQ(parent, device(0));
  ASSERT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(mig, &id), NVML_SUCCESS);
  EXPECT_EQ(id, 1u);
  nvmlMemory_t mem{};
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(mig, &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.total, 40192 * kMiB);
  nvmlMemory_v2_t mem2{};
  mem2.version = nvmlMemory_v2;
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(mig, &mem2), NVML_SUCCESS);
  EXPECT_EQ(mem2.total, 40192 * kMiB);
  unsigned int processes = 5;
  nvmlProcessInfo_t infos[4] = {};
  ASSERT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(mig, &processes, infos), NVML_SUCCESS);
  EXPECT_EQ(processes, 0u);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  ASSERT_EQ(NVML(nvmlDeviceGetName)(mig, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA A100-SXM4-80GB MIG 3g.40gb");
}

}  // namespace
}  // namespace gpufrac

namespace gpufrac {
namespace {

// The compute mode (fake_compute_mode.hpp): DEFAULT until set; EXCLUSIVE_PROCESS and back, kept in
// <state>.compute-mode where the fake libcuda reads it; the driver's refusals.
TEST_F(FakeNvml, ComputeModeIsKeptBesideTheStateFile) {
  const std::string state = ::testing::TempDir() + "/compute-mode-state.json";
  ::unlink((state + ".compute-mode").c_str());
  ::unlink(state.c_str());
  ::setenv("GPUFRAC_FAKE_NVML_STATE", state.c_str(), 1);
  ASSERT_EQ(init("a100-40gb-x2.yaml"), NVML_SUCCESS);
  nvmlComputeMode_t mode = 9;
  ASSERT_EQ(NVML(nvmlDeviceGetComputeMode)(device(1), &mode), NVML_SUCCESS);
  EXPECT_EQ(mode, NVML_COMPUTEMODE_DEFAULT);
  ASSERT_EQ(NVML(nvmlDeviceSetComputeMode)(device(1), NVML_COMPUTEMODE_EXCLUSIVE_PROCESS), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetComputeMode)(device(1), &mode), NVML_SUCCESS);
  EXPECT_EQ(mode, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
  std::ifstream file(state + ".compute-mode");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c 3\n");
  EXPECT_EQ(NVML(nvmlDeviceSetComputeMode)(device(1), NVML_COMPUTEMODE_EXCLUSIVE_THREAD), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceSetComputeMode)(device(1), 7), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(NVML(nvmlDeviceSetComputeMode)(device(1), NVML_COMPUTEMODE_DEFAULT), NVML_SUCCESS);
  std::ifstream again(state + ".compute-mode");
  std::string after((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, "") << "DEFAULT GPUs have no line";
  ::unsetenv("GPUFRAC_FAKE_NVML_STATE");
}

}  // namespace
}  // namespace gpufrac
