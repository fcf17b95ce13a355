// The driver's per-process view (nvml/process_view.hpp) over the fake libnvidia-ml.so.1, which lists
// the processes the fake libcuda records beside its state file (tests/fakes/nvml/fake_processes.hpp):
// live ones only (a pid whose start time changed holds nothing), by pid, with their bytes on the GPU.
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/config/config.hpp"
#include "core/fs.hpp"
#include "core/process.hpp"
#include "core/text.hpp"
#include "fake_proc.hpp"
#include "nvml/process_view.hpp"

namespace gpufrac {
namespace {

const std::string kGpu0 = "GPU-3f6c1d2e-8a41-4b7c-9e35-0d2a6f18c4b7",
                  kGpu1 = "GPU-a2e95b07-41d3-4c8f-b6e0-5f7d93c2a168";

class ProcessViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir("process-view");
    ::setenv("GPUFRAC_FAKE_NVML_MACHINE",
             (std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/h100-80gb-x3-r615.yaml").c_str(), 1);
    ::setenv("GPUFRAC_FAKE_NVML_STATE", (dir_ + "/fake.json").c_str(), 1);
    ASSERT_TRUE(fs::make_dirs(dir_ + "/fake.json.usage"));
  }
  void TearDown() override {
    ::unsetenv("GPUFRAC_FAKE_NVML_MACHINE");
    ::unsetenv("GPUFRAC_FAKE_NVML_STATE");
    std::filesystem::remove_all(dir_);
  }
  // A usage file as the fake libcuda writes it.
  void usage(long pid, std::uint64_t start, const std::string& lines) {
    std::ofstream(text::cat(dir_, "/fake.json.usage/", pid)) << "start " << start << "\ncgroup /c\n" << lines;
  }
  Config config() {
    auto cfg = load_config_string(text::cat("nvml: {backend: nvml, library: ", GPUFRAC_FAKE_NVML, "}\n"), "t.yaml");
    EXPECT_TRUE(cfg) << cfg.error().message;
    return cfg ? *cfg : Config{};
  }
  std::string dir_;
};

TEST_F(ProcessViewTest, LiveProcessesWithTheirBytesOnEachGpu) {
  auto self = read_proc_stat("/proc", ::getpid());
  ASSERT_TRUE(self);
  usage(::getpid(), self->start_time, text::cat("used ", kGpu0, " 1073741824\nused ", kGpu1, " 2048\n"));
  usage(::getppid(), 1, text::cat("used ", kGpu0, " 4096\n"));  // another start time: that process is gone
  auto view = ProcessView::open(config());
  ASSERT_TRUE(view) << view.error().message;
  auto on0 = view->processes(kGpu0);
  ASSERT_TRUE(on0) << on0.error().message;
  EXPECT_EQ(*on0, (std::vector<GpuProcessMemory>{{::getpid(), 1ull << 30}}));
  auto on1 = view->processes(kGpu1);
  ASSERT_TRUE(on1);
  EXPECT_EQ(*on1, (std::vector<GpuProcessMemory>{{::getpid(), 2048}}));
  auto none = view->processes("GPU-00000000-0000-0000-0000-000000000000");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message,
            "GPU-00000000-0000-0000-0000-000000000000: the driver lists no such GPU; run gpufrac info --refresh");
}

TEST_F(ProcessViewTest, ASimulatedMachineHasNoDriverToAsk) {
  Config cfg;
  cfg.nvml.backend = NvmlBackend::simulated;
  cfg.nvml.machine = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/a100-40gb-x1.yaml";
  auto view = ProcessView::open(cfg);
  ASSERT_FALSE(view);
  EXPECT_EQ(view.error().message,
            "the burst reclaimer needs the driver's view of each process's memory: a simulated machine file has no "
            "driver; set nvml: {backend: nvml} (tests use the fake libnvidia-ml.so.1)");
}

}  // namespace
}  // namespace gpufrac
