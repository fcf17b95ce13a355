// What `gpufrac node setup` adds to engine-config: CDI turned on in containerd's drop-in, the k3s /
// RKE2 template, and the host config naming the installed files.
#include <gtest/gtest.h>

#include "cli/node/host_config.hpp"
#include "engine-config/containerd.hpp"
#include "engine-config/k3s.hpp"

namespace gpufrac::engine_config {
namespace {

const std::vector<std::string> kCdiDirs = {"/etc/cdi", "/var/run/cdi"};

ContainerdInput input(const std::string& main) {
  ContainerdInput in;
  in.main = {"/etc/containerd/config.toml", main};
  in.drop_in = {"/etc/containerd/conf.d/99-gpufrac.toml", std::nullopt};
  in.runtime_path = "/usr/local/gpufrac/current/bin/gpufrac-runtime";
  in.cdi_spec_dirs = kCdiDirs;
  return in;
}

std::string drop_in(const ContainerdInput& in) {
  auto plan = plan_containerd(in);
  EXPECT_TRUE(plan) << plan.error().message;
  return plan ? plan->files[0].after : "";
}

TEST(NodeContainerdCdi, TurnedOnRightAfterTheCriHeaderOnVersion2) {
  const std::string d =
      drop_in(input("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"pause:3.9\"\n"
                    "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  snapshotter = \"overlayfs\"\n"));
  EXPECT_NE(d.find("version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  enable_cdi = true\n"
                   "  cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"]\n  sandbox_image = \"pause:3.9\"\n"),
            std::string::npos)
      << d;
}

TEST(NodeContainerdCdi, FalseBecomesTrueAndSpecDirsAreKept) {
  const std::string d =
      drop_in(input("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  cdi_spec_dirs = [\"/srv/cdi\"]\n"
                    "  enable_cdi = false\n"));
  EXPECT_NE(d.find("  cdi_spec_dirs = [\"/srv/cdi\"]\n  enable_cdi = true\n"), std::string::npos) << d;
  EXPECT_EQ(d.find("enable_cdi = false"), std::string::npos) << d;
  EXPECT_EQ(d.find("/var/run/cdi"), std::string::npos) << d;
}

TEST(NodeContainerdCdi, NoCriTableGetsOneOfTheFilesVersion) {
  const std::string d = drop_in(input("version = 2\n"));
  EXPECT_NE(d.find("\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  enable_cdi = true\n"
                   "  cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"]\n"),
            std::string::npos)
      << d;
  EXPECT_EQ(d.find("io.containerd.cri.v1"), std::string::npos) << d;
}

TEST(NodeContainerdCdi, Version3IsOnByDefaultAndOnlyAnExplicitOffChanges) {
  const std::string on = drop_in(input("version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\n"));
  EXPECT_EQ(on.find("enable_cdi"), std::string::npos) << on;
  EXPECT_EQ(on.find("grpc.v1.cri"), std::string::npos) << on;
  const std::string off =
      drop_in(input("version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\n  enable_cdi = false\n"));
  EXPECT_NE(off.find("[plugins.\"io.containerd.cri.v1.runtime\"]\n  enable_cdi = true\n"), std::string::npos) << off;
}

TEST(NodeContainerdCdi, RuntimeConfigureLeavesCdiAlone) {
  ContainerdInput in = input("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  enable_cdi = false\n");
  in.cdi_spec_dirs.clear();
  EXPECT_NE(drop_in(in).find("enable_cdi = false"), std::string::npos);
}

constexpr const char* kRenderedV3 =
    "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\n"
    "  runtime_type = \"io.containerd.runc.v2\"\n"
    "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n";

TEST(NodeK3s, NewTemplateExtendsTheBaseWithTheRenderedVersion) {
  const std::string path = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml";
  auto plan =
      plan_k3s({path, kRenderedV3}, {"/x/config-v3.toml.tmpl", std::nullopt}, "/opt/g/current/bin/gpufrac-runtime");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(
      plan->files[0].after,
      std::string("{{ template \"base\" . }}\n\n") + kK3sBegin +
          "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.gpufrac]\n"
          "  runtime_type = \"io.containerd.runc.v2\"\n"
          "  pod_annotations = [\"gpufrac.io/*\", \"gpu-fraction\", \"gpu-memory\", \"clearml-injector/fraction\", "
          "\"gpu-fraction.limit\", \"gpu-memory.limit\"]\n"
          "  container_annotations = [\"gpufrac.io/*\", \"gpu-fraction\", \"gpu-memory\", "
          "\"clearml-injector/fraction\", \"gpu-fraction.limit\", \"gpu-memory.limit\", \"cdi.k8s.io/*\"]\n"
          "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.gpufrac.options]\n"
          "  BinaryName = \"/opt/g/current/bin/gpufrac-runtime\"\n  SystemdCgroup = true\n" +
          kK3sEnd);
  EXPECT_EQ(k3s_template_path(path, 3, false, false), "/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl");
  EXPECT_EQ(k3s_template_path(path, 3, false, true), "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl");
  EXPECT_EQ(k3s_template_path(path, 2, true, false), "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl");
}

TEST(NodeK3s, OperatorTemplateKeptAndBlockReplacedNotRepeated) {
  const std::string own = "{{ template \"base\" . }}\n[plugins.\"io.containerd.cri.v1.runtime\"]\n  x = 1";
  auto first = plan_k3s({"/r/config.toml", kRenderedV3}, {"/r/config-v3.toml.tmpl", own}, "/b");
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->files[0].after.starts_with(own + "\n\n" + kK3sBegin)) << first->files[0].after;
  auto second = plan_k3s({"/r/config.toml", kRenderedV3}, {"/r/config-v3.toml.tmpl", first->files[0].after}, "/b");
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->files[0].changed()) << second->files[0].after;
}

TEST(NodeK3s, RenderedConfigMissingOrOfAnotherVersion) {
  auto missing = plan_k3s({"/r/config.toml", std::nullopt}, {"/r/config.toml.tmpl", std::nullopt}, "/b");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "/r/config.toml: missing; start k3s (or RKE2) once so that it renders its containerd config");
  auto v1 = plan_k3s({"/r/config.toml", "version = 1\n"}, {"/r/config.toml.tmpl", std::nullopt}, "/b");
  ASSERT_FALSE(v1);
  EXPECT_EQ(v1.error().message,
            "/r/config.toml:1: version \"1\" is not supported; k3s renders version 2 (containerd 1.7) or 3 (2.x)");
}

constexpr const char* kRenderedV2 =
    "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"p\"\n"
    "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n";

TEST(NodeK3s, CdiOffInTheRenderedConfigIsAWarning) {
  auto v2 = plan_k3s({"/r/config.toml", kRenderedV2}, {"/r/config.toml.tmpl", std::nullopt}, "/b");
  ASSERT_TRUE(v2) << v2.error().message;
  ASSERT_EQ(v2->warnings.size(), 1u);
  EXPECT_EQ(v2->warnings[0],
            "/r/config.toml: CDI is off (enable_cdi is unset under [plugins.\"io.containerd.grpc.v1.cri\"], "
            "containerd 1.7's default): the gpufrac handler works, CDI devices and gpufrac-dra do not; set "
            "enable_cdi = true there in a config.toml.tmpl that copies k3s's base template, or run a k3s (or RKE2) "
            "with containerd 2.x");
  EXPECT_EQ(v2->files[0].after.find("enable_cdi"), std::string::npos) << "the base's table is not repeated";
  auto v2_on =
      plan_k3s({"/r/config.toml", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  enable_cdi = true\n"},
               {"/r/config.toml.tmpl", std::nullopt}, "/b");
  ASSERT_TRUE(v2_on) << v2_on.error().message;
  EXPECT_TRUE(v2_on->warnings.empty());
  auto v3 = plan_k3s({"/r/config.toml", kRenderedV3}, {"/r/config-v3.toml.tmpl", std::nullopt}, "/b");
  ASSERT_TRUE(v3);
  EXPECT_TRUE(v3->warnings.empty()) << "containerd 2.x turns CDI on by default";
  auto v3_off =
      plan_k3s({"/r/config.toml", "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\n  enable_cdi = false\n"},
               {"/r/config-v3.toml.tmpl", std::nullopt}, "/b");
  ASSERT_TRUE(v3_off);
  ASSERT_EQ(v3_off->warnings.size(), 1u);
  EXPECT_TRUE(
      v3_off->warnings[0].starts_with("/r/config.toml: CDI is off (enable_cdi is false under "
                                      "[plugins.\"io.containerd.cri.v1.runtime\"]): "))
      << v3_off->warnings[0];
}

TEST(NodeHostConfig, PathsOfTheInstalledFilesReplaceTheSources) {
  const cli::node::Installed in = cli::node::installed_paths("/opt/gpufrac");
  const std::string src =
      "# mine\nstate-dir: /run/gpufrac\nshim:\n  path: /usr/lib/x/libgpufrac-limits.so\n"
      "hook: {path: /usr/bin/gpufrac-hook}\nlog:\n  level: debug\ncli:\n  path: /usr/bin/gpufrac\n";
  EXPECT_EQ(cli::node::render_host_config(src, in),
            "# mine\nstate-dir: /run/gpufrac\nlog:\n  level: debug\n\n"
            "# The files `gpufrac node setup` installed (/opt/gpufrac/current -> the version in use).\n"
            "shim:\n  path: /opt/gpufrac/current/lib/gpufrac/libgpufrac-limits.so\n"
            "hook:\n  path: /opt/gpufrac/current/bin/gpufrac-hook\n"
            "cli:\n  path: /opt/gpufrac/current/bin/gpufrac\n");
  const std::string once = cli::node::render_host_config(src, in);
  EXPECT_EQ(cli::node::render_host_config(once, in), once);
}

}  // namespace
}  // namespace gpufrac::engine_config
