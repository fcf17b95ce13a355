// The hook's side of driver injection: NVIDIA's edits found in a spec, the inject decision, GPU
// nodes outside the grant refused, the container's ld.so.conf and the --ld-cache argument.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "bundle/nvidia_edits.hpp"
#include "hook/driver_step.hpp"
#include "hook/ld_cache_update.hpp"
#include "scratch_dir.hpp"

namespace gpufrac::hook {
using namespace gpufrac::bundle;  // the bundle layer the hook is built on
namespace {

BundleSpec spec_with(std::vector<SpecHook> hooks, std::vector<std::string> mounts, std::vector<std::string> devices) {
  BundleSpec s;
  s.hooks = std::move(hooks);
  s.mount_destinations = std::move(mounts);
  s.device_paths = std::move(devices);
  return s;
}

Inventory with_driver() {
  Inventory inv;
  inv.driver.version = "550.54.15";
  inv.driver.files = {{DriverFileKind::library, "/h/libcuda.so.550.54.15", "/usr/lib/libcuda.so.550.54.15"}};
  return inv;
}

TEST(NvidiaEdits, FoundByHookOrDriverMount) {
  EXPECT_FALSE(find_nvidia_edits(spec_with({}, {"/run/gpufrac", "/etc/ld.so.preload"}, {"/dev/nvidia0"})).driver);
  auto cdi_hook = find_nvidia_edits(
      spec_with({{"/usr/bin/nvidia-cdi-hook", {"nvidia-cdi-hook", "update-ldcache", "--folder", "/usr/lib"}}}, {}, {}));
  EXPECT_TRUE(cdi_hook.driver);
  EXPECT_TRUE(cdi_hook.ldcache_hook);
  auto symlinks =
      find_nvidia_edits(spec_with({{"/usr/bin/nvidia-ctk", {"nvidia-ctk", "hook", "create-symlinks"}}}, {}, {}));
  EXPECT_TRUE(symlinks.driver);
  EXPECT_FALSE(symlinks.ldcache_hook);
  EXPECT_TRUE(find_nvidia_edits(spec_with({{"/usr/bin/nvidia-container-runtime-hook", {"x", "prestart"}}}, {}, {}))
                  .ldcache_hook);
  EXPECT_TRUE(find_nvidia_edits(spec_with({}, {"/usr/lib64/libnvidia-ml.so.550.54.15"}, {})).driver);
}

TEST(NvidiaEdits, InjectDecision) {
  Config cfg = default_config();
  const NvidiaEdits none, nvidia{true, true};
  EXPECT_TRUE(injects_driver(cfg, with_driver(), none));
  EXPECT_FALSE(injects_driver(cfg, with_driver(), nvidia));  // auto leaves it to NVIDIA
  EXPECT_FALSE(injects_driver(cfg, Inventory{}, none));      // nothing found at refresh
  cfg.driver.inject = DriverInject::always;
  EXPECT_TRUE(injects_driver(cfg, with_driver(), nvidia));
  cfg.driver.inject = DriverInject::never;
  EXPECT_FALSE(injects_driver(cfg, with_driver(), none));
}

TEST(NvidiaEdits, AGpuOutsideTheGrantIsRefusedWithOneLine) {
  std::vector<EditDeviceNode> granted = {{"/dev/nvidia0", "", 'c', 195, 0}, {"/dev/nvidiactl", "", 'c', 195, 255}};
  EXPECT_TRUE(check_spec_gpu_nodes(spec_with({}, {}, {"/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"}), granted));
  auto r = check_spec_gpu_nodes(spec_with({}, {}, {"/dev/nvidia0", "/dev/nvidia1"}), granted);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("\"/dev/nvidia1\", a GPU gpufrac did not grant it (granted: /dev/nvidia0)"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  EXPECT_FALSE(check_spec_gpu_nodes(spec_with({}, {"/dev/nvidia-caps/nvidia-cap12"}, {}), granted));
}

TEST(LdCacheConf, DriverDirectoriesFirstThenTheImage) {
  const std::string conf = container_ld_so_conf({"/usr/lib64"}, true);
  EXPECT_TRUE(conf.starts_with("# written by gpufrac-hook"));
  EXPECT_LT(conf.find("/usr/lib64\n"), conf.find("include /etc/ld.so.conf\n"));
  EXPECT_LT(conf.find("include /etc/ld.so.conf\n"), conf.find("/usr/lib/x86_64-linux-gnu\n"));
  EXPECT_EQ(container_ld_so_conf({"/usr/lib64"}, false).find("include"), std::string::npos);
}

TEST(LdCacheArg, AbsoluteDirectoriesOnly) {
  auto ok = parse_ld_cache_dirs("/usr/lib/x86_64-linux-gnu:/usr/lib64");
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, (std::vector<std::string>{"/usr/lib/x86_64-linux-gnu", "/usr/lib64"}));
  for (const char* bad : {"", "lib", "/usr/lib:", "/usr/../etc"}) {
    auto r = parse_ld_cache_dirs(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_TRUE(r.error().message.starts_with("--ld-cache: ")) << r.error().message;
  }
}

TEST(LdCacheProgram, OnlyAStaticRootOwnedProgram) {
  auto sealed = sealed_static_program("/sbin/ldconfig");
  ASSERT_TRUE(sealed) << sealed.error().message;
  // The copy is the program byte for byte, sealed against every change and executable.
  std::ifstream in("/sbin/ldconfig", std::ios::binary);
  const std::string want((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  struct stat st {};
  ASSERT_EQ(::fstat(*sealed, &st), 0);
  ASSERT_EQ(static_cast<std::size_t>(st.st_size), want.size());
  std::string got(want.size(), '\0');
  ASSERT_EQ(::pread(*sealed, got.data(), got.size(), 0), static_cast<ssize_t>(got.size()));
  EXPECT_TRUE(got == want);
  EXPECT_EQ(::fcntl(*sealed, F_GET_SEALS), F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_EQ(st.st_mode & 0777, 0555u);
  ::close(*sealed);
  auto dynamic = sealed_static_program("/bin/ls");
  ASSERT_FALSE(dynamic);
  EXPECT_NE(dynamic.error().message.find("dynamically linked"), std::string::npos) << dynamic.error().message;
}

// Ubuntu: /sbin/ldconfig is a shell script that execs /sbin/ldconfig.real, the static program.
TEST(LdCacheProgram, UbuntuLdconfigRealIsPreferredAndAScriptIsRefused) {
  const std::string sbin = test::scratch_dir("ldconfig");
  std::ofstream(sbin + "/ldconfig") << "#!/bin/sh\nexec /sbin/ldconfig.real \"$@\"\n";
  ASSERT_EQ(::chmod((sbin + "/ldconfig").c_str(), 0755), 0);
  EXPECT_EQ(host_ldconfig(sbin), sbin + "/ldconfig");
  auto script = sealed_static_program(host_ldconfig(sbin));
  ASSERT_FALSE(script);
  EXPECT_NE(script.error().message.find(sbin + "/ldconfig"), std::string::npos) << script.error().message;
  std::ofstream(sbin + "/ldconfig.real") << std::ifstream("/sbin/ldconfig", std::ios::binary).rdbuf();
  ASSERT_EQ(::chmod((sbin + "/ldconfig.real").c_str(), 0755), 0);
  EXPECT_EQ(host_ldconfig(sbin), sbin + "/ldconfig.real");
  auto real = sealed_static_program(host_ldconfig(sbin));
  ASSERT_TRUE(real) << real.error().message;
  ::close(*real);
  EXPECT_EQ(host_ldconfig(), ::access("/sbin/ldconfig.real", F_OK) == 0 ? "/sbin/ldconfig.real" : "/sbin/ldconfig");
}

}  // namespace
}  // namespace gpufrac::hook
