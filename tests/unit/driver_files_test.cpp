// The driver's user space: ELF and loader-cache parsing, discovery over simulated driver installs
// (every layout, the stale decoy, a version mismatch) and the planner's mounts and env for it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/driver/elf_info.hpp"
#include "core/driver/ld_cache.hpp"
#include "core/fs.hpp"
#include "core/plan/plan.hpp"
#include "nvml/driver_discovery.hpp"
#include "nvml/inventory_cache.hpp"
#include "nvml/sim_driver.hpp"
#include "nvml/sim_root.hpp"

namespace gpufrac {
namespace {

const std::string kMachine = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/a100-40gb-x1.yaml";
constexpr const char* kLib = "/usr/lib/x86_64-linux-gnu";

class DriverFiles_ : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-driver-test.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // A simulated node with the driver in `layout`; returns its config.
  Config node(SimDriverLayout layout) {
    auto m = load_simulated_machine(kMachine);
    EXPECT_TRUE(m);
    Config cfg = default_config();
    cfg.state_dir = dir_ + "/state";
    cfg.host_root = dir_ + "/root";
    cfg.nvml.backend = NvmlBackend::simulated;
    cfg.nvml.machine = kMachine;
    EXPECT_TRUE(write_simulated_host_root(*m, cfg.host_root, false));
    auto r = write_simulated_driver(*m, cfg.host_root, {GPUFRAC_DRIVER_KIT, layout});
    EXPECT_TRUE(r) << r.error().message;
    return cfg;
  }
  static std::vector<std::string> container_paths(const DriverFiles& d, DriverFileKind kind) {
    std::vector<std::string> out;
    for (const auto& f : d.files)
      if (f.kind == kind) out.push_back(f.container_path);
    return out;
  }
  std::string dir_;
};

TEST(ElfInfo, ReadsTheSonameAndTellsStaticFromDynamic) {
  auto cuda = read_elf(std::string(GPUFRAC_DRIVER_KIT) + "/lib/libcuda.so.1");
  ASSERT_TRUE(cuda) << cuda.error().message;
  EXPECT_EQ(cuda->soname, "libcuda.so.1");
  EXPECT_TRUE(cuda->has_dynamic);
  EXPECT_FALSE(cuda->has_interp);
  auto ldconfig = read_elf("/sbin/ldconfig");
  ASSERT_TRUE(ldconfig) << ldconfig.error().message;
  EXPECT_TRUE(ldconfig->is_static());
  EXPECT_FALSE(ldconfig->soname);
}

TEST(ElfInfo, RefusesWhatIsNotAnElfOrIsCut) {
  EXPECT_FALSE(parse_elf("#!/bin/sh\n"));
  auto bytes = fs::read_file(std::string(GPUFRAC_DRIVER_KIT) + "/lib/libcuda.so.1", 64u << 20);
  ASSERT_TRUE(bytes);
  for (std::size_t n : {4u, 63u, 200u}) EXPECT_FALSE(parse_elf(bytes->substr(0, n))) << n;
}

TEST_F(DriverFiles_, TheLoaderCacheReadsAsLdconfigPrintsIt) {
  Config cfg = node(SimDriverLayout::debian);
  const std::string cache = cfg.host_root + "/etc/ld.so.cache";
  auto bytes = fs::read_file(cache, 64u << 20);
  ASSERT_TRUE(bytes) << bytes.error().message;
  auto entries = parse_ld_cache(*bytes);
  ASSERT_TRUE(entries) << entries.error().message;
  std::string printed;
  FILE* p = ::popen(("ldconfig -p -C " + cache).c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) printed.append(buf, n);
  ::pclose(p);
  ASSERT_FALSE(entries->empty());
  for (const auto& e : *entries) {
    EXPECT_EQ(e.flags, native_ld_cache_flags()) << e.name;
    EXPECT_NE(printed.find(e.name + " (libc6,x86-64) => " + e.path), std::string::npos) << e.name;
  }
  EXPECT_NE(std::find(entries->begin(), entries->end(),
                      LdCacheEntry{"libcuda.so.1", std::string(kLib) + "/libcuda.so.1", native_ld_cache_flags()}),
            entries->end());
}

TEST(LdCache, RefusesCutAndLyingCaches) {
  EXPECT_FALSE(parse_ld_cache(""));
  EXPECT_FALSE(parse_ld_cache("glibc-ld.so.cache1.1"));
  std::string header("glibc-ld.so.cache1.1", 20);
  header.resize(48, '\0');
  header[20] = '\x7f';  // 127 entries that are not there
  EXPECT_FALSE(parse_ld_cache(header));
}

TEST_F(DriverFiles_, EveryLayoutGivesTheLoadedVersionOnly) {
  for (auto [layout, lib] : {std::pair{SimDriverLayout::debian, std::string(kLib)},
                             std::pair{SimDriverLayout::lib64, std::string("/usr/lib64")},
                             std::pair{SimDriverLayout::no_cache, std::string(kLib)},
                             std::pair{SimDriverLayout::prefix, std::string("/usr/local/nvidia/lib64")}}) {
    std::filesystem::remove_all(dir_ + "/root");
    Config cfg = node(layout);
    auto found = discover_driver_files(cfg, "550.54.15");
    ASSERT_TRUE(found) << found.error().message;
    ASSERT_TRUE(*found);
    const DriverFiles& d = **found;
    EXPECT_EQ(d.version, "550.54.15");
    EXPECT_EQ(d.library_dirs, std::vector<std::string>{lib});
    auto libs = container_paths(d, DriverFileKind::library);
    EXPECT_NE(std::find(libs.begin(), libs.end(), lib + "/libcuda.so.550.54.15"), libs.end());
    EXPECT_NE(std::find(libs.begin(), libs.end(), lib + "/libnvidia-ml.so.550.54.15"), libs.end());
    auto links = container_paths(d, DriverFileKind::link);
    for (const char* l : {"/libcuda.so.1", "/libcuda.so", "/libnvidia-ml.so.1"})
      EXPECT_NE(std::find(links.begin(), links.end(), lib + l), links.end()) << l;
    for (const auto& f : d.files) {
      EXPECT_EQ(f.container_path.find(kSimStaleDriverVersion), std::string::npos) << f.container_path;
      EXPECT_EQ(f.host_path.find(kSimStaleDriverVersion), std::string::npos) << f.host_path;
      EXPECT_TRUE(f.host_path.starts_with(cfg.host_root)) << f.host_path;
    }
    EXPECT_EQ(
        container_paths(d, DriverFileKind::binary),
        (std::vector<std::string>{"/usr/bin/nvidia-smi", "/usr/bin/nvidia-debugdump", "/usr/bin/nvidia-persistenced",
                                  "/usr/bin/nvidia-cuda-mps-control", "/usr/bin/nvidia-cuda-mps-server"}));
    const std::string bin = layout == SimDriverLayout::prefix ? "/usr/local/nvidia/bin" : "/usr/bin";
    for (const auto& f : d.files) {
      if (f.kind != DriverFileKind::binary) continue;
      EXPECT_EQ(f.host_path, cfg.host_root + bin + "/" + std::filesystem::path(f.container_path).filename().string());
    }
    EXPECT_EQ(container_paths(d, DriverFileKind::socket), std::vector<std::string>{"/run/nvidia-persistenced/socket"});
    EXPECT_FALSE(container_paths(d, DriverFileKind::firmware).empty());
  }
}

// Cloud images: /usr/bin/nvidia-smi is a shell wrapper naming /usr/local/nvidia/bin/nvidia-smi, a
// host path the container lacks. The driver's own ELF program is taken; a wrapper never is.
TEST_F(DriverFiles_, AShellWrapperIsNeverTakenForTheDriversProgram) {
  Config cfg = node(SimDriverLayout::prefix);
  auto wrapper = fs::read_file(cfg.host_root + "/usr/bin/nvidia-smi", 4096);
  ASSERT_TRUE(wrapper && wrapper->starts_with("#!/bin/sh")) << "the prefix layout's wrapper script";
  std::filesystem::remove(cfg.host_root + "/usr/local/nvidia/bin/nvidia-smi");
  auto found = discover_driver_files(cfg, "550.54.15");
  ASSERT_TRUE(found && *found);
  auto binaries = container_paths(**found, DriverFileKind::binary);
  EXPECT_EQ(std::find(binaries.begin(), binaries.end(), "/usr/bin/nvidia-smi"), binaries.end());
  EXPECT_EQ(binaries.size(), 4u);
}

TEST_F(DriverFiles_, AVersionMismatchIsOneLineAtRefresh) {
  Config cfg = node(SimDriverLayout::debian);
  auto found = discover_driver_files(cfg, "535.104.05");
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().message.find("535.104.05"), std::string::npos) << found.error().message;
  EXPECT_NE(found.error().message.find("550.54.15"), std::string::npos) << found.error().message;
  EXPECT_EQ(found.error().message.find('\n'), std::string::npos);
}

TEST_F(DriverFiles_, TheSimulatedInventoryCarriesTheDriverUnlessNever) {
  Config cfg = node(SimDriverLayout::debian);
  auto inv = discover_simulated(cfg);
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_FALSE(inv->driver.empty());
  cfg.driver.inject = DriverInject::never;
  auto without = discover_simulated(cfg);
  ASSERT_TRUE(without);
  EXPECT_TRUE(without->driver.empty());
}

TEST(KernelModuleVersion, BothDriverFlavours) {
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 "
                                        "22:23:56 UTC 2024\nGCC version: gcc 12\n"),
            "550.54.15");
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  "
                                        "Release Build  (dvs-builder@U16-I3-B03-4-3)\n"),
            "535.104.05");
  EXPECT_FALSE(parse_kernel_module_version("garbage"));
}

TEST(CanonicalPath, MergedUsr) {
  EXPECT_EQ(canonical_container_path("/lib/x86_64-linux-gnu/libcuda.so.1"), "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(canonical_container_path("/lib64/libcuda.so.1"), "/usr/lib64/libcuda.so.1");
  EXPECT_EQ(canonical_container_path("/var/run/nvidia-persistenced/socket"), "/run/nvidia-persistenced/socket");
  EXPECT_EQ(canonical_container_path("/library/x"), "/library/x");
  EXPECT_EQ(canonical_container_path("/usr/bin/nvidia-smi"), "/usr/bin/nvidia-smi");
}

TEST(PlanDriver, MountsAreReadOnlyNosuidNodevAndSocketsWritable) {
  DriverFiles d{"550.54.15",
                "/",
                {{DriverFileKind::library, "/h/libcuda.so.550.54.15", "/usr/lib/libcuda.so.550.54.15"},
                 {DriverFileKind::firmware, "/h/gsp.bin", "/usr/lib/firmware/gsp.bin"},
                 {DriverFileKind::socket, "/h/socket", "/run/nvidia-persistenced/socket"}},
                {"/usr/lib"}};
  auto m = plan_driver_mounts(d);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(
      m[0],
      (EditMount{
          "/h/libcuda.so.550.54.15", "/usr/lib/libcuda.so.550.54.15", "bind", {"ro", "nosuid", "nodev", "bind"}}));
  EXPECT_EQ(m[1].options, (std::vector<std::string>{"ro", "nosuid", "nodev", "noexec", "bind"}));
  EXPECT_EQ(m[2].options, (std::vector<std::string>{"nosuid", "nodev", "noexec", "bind"}));
  EXPECT_EQ(ld_cache_arg(d), "/usr/lib");
}

TEST(PlanDriver, NvidiaVisibleDevicesIsVoidOrTheGrant) {
  Grant a, b;
  a.device_uuid = "GPU-a";
  b.device_uuid = "MIG-b";
  EXPECT_EQ(plan_nvidia_visible_devices({a, b}, true), "NVIDIA_VISIBLE_DEVICES=void");
  EXPECT_EQ(plan_nvidia_visible_devices({a, b, a}, false), "NVIDIA_VISIBLE_DEVICES=GPU-a,MIG-b");
  EXPECT_EQ(plan_nvidia_visible_devices({}, false), "NVIDIA_VISIBLE_DEVICES=void");
}

}  // namespace
}  // namespace gpufrac
