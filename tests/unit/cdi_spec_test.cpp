// The spec generate builds: which devices, what each carries (from the planner), the spec-level
// edits, versions, and what is left out.
#include <gtest/gtest.h>

#include "cdi/cdi_names.hpp"
#include "cdi/device_names.hpp"
#include "cdi/render.hpp"
#include "cdi/spec.hpp"
#include "cdi_test_util.hpp"

namespace gpufrac::cdi {
namespace {

Built build(const std::string& machine, const Config& cfg = test::golden_config()) {
  auto b = build_spec(test::machine_inventory(machine), cfg, kKind);
  EXPECT_TRUE(b) << b.error().message;
  return b ? *b : Built{};
}

std::vector<std::string> names(const Spec& s) {
  std::vector<std::string> out;
  for (const auto& d : s.devices) out.push_back(d.name);
  return out;
}

const Device& device(const Spec& s, const std::string& name) {
  for (const auto& d : s.devices)
    if (d.name == name) return d;
  ADD_FAILURE() << "no device " << name;
  static const Device none;
  return none;
}

EditHook expected_hook(const std::string& stage, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"gpufrac-hook", stage};
  args.insert(args.end(), extra.begin(), extra.end());
  return EditHook{stage,
                  "/usr/bin/gpufrac-hook",
                  args,
                  {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "GPUFRAC_CONFIG=/etc/gpufrac/config.yaml"},
                  30};
}

TEST(CdiSpec, OneGpuDevicesInOrder) {
  Built b = build("a100-40gb-x1.yaml");
  EXPECT_EQ(names(b.spec),
            (std::vector<std::string>{"0", "GPU-894e9a6d-f600-b098-3d59-138988473c2c", "0-0.125", "0-0.25", "0-0.375",
                                      "0-0.5", "0-0.625", "0-0.75", "0-0.875", "0-4Gi", "0-10Gi", "all"}));
  EXPECT_EQ(b.warnings, std::vector<std::string>{"no device gpufrac.io/gpu=0-48Gi: CDI device \"0-48Gi\": 48Gi is not "
                                                 "less than GPU 0's 39.6 GiB; a whole GPU is device 0"});
  EXPECT_EQ(b.spec.kind, "gpufrac.io/gpu");
}

TEST(CdiSpec, SpecLevelEditsAreWhatEveryContainerShares) {
  const Built b = build("a100-40gb-x1.yaml");
  const Edits& c = b.spec.common;
  EXPECT_TRUE(c.env.empty());
  EXPECT_TRUE(c.hooks.empty());
  ASSERT_EQ(c.device_nodes.size(), 3u);
  EXPECT_EQ(c.device_nodes[0], (EditDeviceNode{"/dev/nvidiactl", "/dev/nvidiactl", 'c', 195, 255, 0666u, "rw"}));
  EXPECT_EQ(c.device_nodes[1].path, "/dev/nvidia-uvm");
  EXPECT_EQ(c.device_nodes[2].path, "/dev/nvidia-uvm-tools");
  // Only the preload: gpufrac's directory (/run/gpufrac) is mounted by each device's hook.
  ASSERT_EQ(c.mounts.size(), 1u);
  EXPECT_EQ(c.mounts[0], (EditMount{"/run/gpufrac/cdi/ld.so.preload",
                                    "/etc/ld.so.preload",
                                    "bind",
                                    {"ro", "nosuid", "nodev", "noexec", "bind"}}));
  EXPECT_EQ(cdi_preload_path(test::golden_config()), "/run/gpufrac/cdi/ld.so.preload");
  EXPECT_EQ(cdi_preload_content(), "/run/gpufrac/libgpufrac-limits.so\n");
}

TEST(CdiSpec, ShareDeviceCarriesItsNodeEnvAndHooks) {
  const Built b = build("a100-40gb-x1.yaml");
  const Device& d = device(b.spec, "0-0.25");
  EXPECT_EQ(d.edits.env,
            (std::vector<std::string>{"GPUFRAC_DEVICES=GPU-894e9a6d-f600-b098-3d59-138988473c2c",
                                      "GPUFRAC_MEMORY_LIMITS=10626269184",  // 10134 MiB
                                      // no driver files on this node: NVIDIA's runtime may add this GPU only
                                      "NVIDIA_VISIBLE_DEVICES=GPU-894e9a6d-f600-b098-3d59-138988473c2c"}));
  EXPECT_EQ(d.edits.device_nodes,
            (std::vector<EditDeviceNode>{{"/dev/nvidia0", "/dev/nvidia0", 'c', 195, 0, 0666u, "rw"}}));
  EXPECT_EQ(d.edits.hooks, (std::vector<EditHook>{expected_hook("createRuntime", {"--cdi-device", "0-0.25"}),
                                                  expected_hook("poststop")}));
  EXPECT_TRUE(d.edits.mounts.empty());
}

// With the driver's files in the inventory the spec brings them (spec-level, so a device alone gives
// a working CUDA container), tells NVIDIA's runtime to add nothing and rebuilds the loader cache.
TEST(CdiSpec, TheDriverIsSpecLevelWhenTheNodeHasIt) {
  Inventory inv = test::machine_inventory("a100-40gb-x1.yaml");
  inv.driver = {"550.54.15",
                "/",
                {{DriverFileKind::library, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                  "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"},
                 {DriverFileKind::link, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                  "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}},
                {"/usr/lib/x86_64-linux-gnu"}};
  auto b = build_spec(inv, test::golden_config(), kKind);
  ASSERT_TRUE(b) << b.error().message;
  const Edits& c = b->spec.common;
  EXPECT_EQ(c.env, std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"});
  ASSERT_EQ(c.mounts.size(), 3u);  // the preload, then the driver's two files
  EXPECT_EQ(c.mounts[2], (EditMount{"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                                    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                    "bind",
                                    {"ro", "nosuid", "nodev", "bind"}}));
  EXPECT_EQ(c.hooks,
            std::vector<EditHook>{expected_hook("createRuntime", {"--ld-cache", "/usr/lib/x86_64-linux-gnu"})});
  EXPECT_EQ(device(b->spec, "0-0.25").edits.env.size(), 2u);  // GPUFRAC_* only
  Config never = test::golden_config();
  never.driver.inject = DriverInject::never;
  auto without = build_spec(inv, never, kKind);
  ASSERT_TRUE(without);
  EXPECT_EQ(without->spec.common.mounts.size(), 1u);
  EXPECT_TRUE(without->spec.common.hooks.empty());
}

TEST(CdiSpec, MigModeGpusOfferOnlyTheirInstances) {
  Built b = build("dgx-8gpu-mixed.yaml");
  for (const std::string n : {"4", "4-0.25", "4-4Gi", "GPU-7d41e079-8f1a-4893-abeb-5e3216abe30b", "7", "7-0.5"})
    for (const auto& d : b.spec.devices) EXPECT_NE(d.name, n);
  const Device& mig = device(b.spec, "4:0");
  EXPECT_EQ(mig.edits.env,
            (std::vector<std::string>{"GPUFRAC_DEVICES=MIG-1cd67efc-5096-ec5a-d715-8bd1a717ea38",
                                      "GPUFRAC_MEMORY_LIMITS=42144366592",  // 40192 MiB
                                      "NVIDIA_VISIBLE_DEVICES=MIG-1cd67efc-5096-ec5a-d715-8bd1a717ea38"}));
  ASSERT_EQ(mig.edits.device_nodes.size(), 3u);
  EXPECT_EQ(mig.edits.device_nodes[0].path, "/dev/nvidia4");
  EXPECT_EQ(mig.edits.device_nodes[1].path, "/dev/nvidia-caps/nvidia-cap552");
  EXPECT_EQ(mig.edits.device_nodes[2].path, "/dev/nvidia-caps/nvidia-cap553");
  EXPECT_EQ(device(b.spec, "MIG-1cd67efc-5096-ec5a-d715-8bd1a717ea38").edits.device_nodes, mig.edits.device_nodes);
  // 4 whole GPUs x (index, UUID, 7 fractions, 3 memory shares) + 15 MIG instances x 2 + all.
  EXPECT_EQ(b.spec.devices.size(), 4u * 12 + 15 * 2 + 1);
  EXPECT_TRUE(b.warnings.empty());
}

TEST(CdiSpec, AllBooksEveryMemberWithOneReleaseHook) {
  Built b = build("dgx-8gpu-mixed.yaml");
  const Device& all = b.spec.devices.back();
  ASSERT_EQ(all.name, "all");
  ASSERT_EQ(all.edits.hooks.size(), 20u);
  EXPECT_EQ(all.edits.hooks[0], expected_hook("createRuntime", {"--cdi-device", "0"}));
  EXPECT_EQ(all.edits.hooks[4], expected_hook("createRuntime", {"--cdi-device", "4:0"}));
  EXPECT_EQ(all.edits.hooks[18], expected_hook("createRuntime", {"--cdi-device", "6:6"}));
  EXPECT_EQ(all.edits.hooks[19], expected_hook("poststop"));
  EXPECT_EQ(all.edits.device_nodes.size(), 7u + 15 * 2);  // GPUs 0-6 plus two capability nodes per instance
  EXPECT_EQ(all.edits.env[0].substr(0, 62), "GPUFRAC_DEVICES=GPU-7c7581aa-b6e4-a6a5-e16e-ccdf0127e776,GPU-2");
}

TEST(CdiSpec, EveryDeviceNameMapsBackToItsBooking) {
  const Inventory inv = test::machine_inventory("dgx-8gpu-mixed.yaml");
  auto b = build_spec(inv, test::golden_config(), kKind);
  ASSERT_TRUE(b);
  for (const auto& d : b->spec.devices) {
    auto members = cdi_device_members(d.name, inv);
    ASSERT_TRUE(members) << members.error().message;
    std::vector<std::string> hooked;
    for (const auto& h : d.edits.hooks)
      if (h.hook_name == "createRuntime") hooked.push_back(h.args.back());
    EXPECT_EQ(hooked, *members) << d.name;
  }
}

TEST(CdiSpec, MigInstanceWithoutCapabilityNodesIsLeftOut) {
  Inventory inv = test::machine_inventory("a100-80gb-mig.yaml");
  inv.gpus[0].mig_instances[1].cap_nodes.clear();
  auto b = build_spec(inv, test::golden_config(), kKind);
  ASSERT_TRUE(b);
  EXPECT_EQ(names(b->spec), (std::vector<std::string>{"0:0", "MIG-4abe8dfe-56e0-1af9-c15d-053625ecbfe1", "0:2",
                                                      "MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e", "0:3",
                                                      "MIG-6ab7d7ee-fc32-0d24-eb1d-a652742cd522", "all"}));
  ASSERT_EQ(b->warnings.size(), 2u);
  EXPECT_EQ(b->warnings[0],
            "no device gpufrac.io/gpu=0:1: no idle MIG instance of profile 2g.20gb: GPU 0 gi 5 ci 0 has "
            "no capability device nodes (the host's /proc/driver/nvidia-caps/mig-minors does not list it)");
  EXPECT_EQ(device(b->spec, "all").edits.hooks.size(), 4u);  // 0:0, 0:2, 0:3 and the release
}

TEST(CdiSpec, DriverNotLoadedIsAnError) {
  Inventory inv = test::machine_inventory("a100-40gb-x1.yaml");
  for (auto& n : inv.control_nodes) n.major = -1;
  auto b = build_spec(inv, test::golden_config(), kKind);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message,
            "the NVIDIA driver lists no device major for /dev/nvidiactl in /proc/devices; is the driver loaded?");
}

TEST(CdiSpec, NoGpuNoDevice) {
  Inventory inv = test::machine_inventory("h100-80gb-mig-empty.yaml");
  auto b = build_spec(inv, test::golden_config(), kKind);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->spec.devices.empty());
}

TEST(CdiSpec, VersionFollowsTheContent) {
  Config cfg = test::golden_config();
  auto plain = spec_json(build("a100-40gb-x1.yaml", cfg).spec);
  EXPECT_EQ(plain["cdiVersion"], "0.5.0");  // device names start with a digit
  EXPECT_FALSE(plain["containerEdits"]["deviceNodes"][0].contains("hostPath"));
  cfg.host_root = "/host";
  auto rooted = spec_json(build("a100-40gb-x1.yaml", cfg).spec);
  EXPECT_EQ(rooted["containerEdits"]["deviceNodes"][0]["hostPath"], "/host/dev/nvidiactl");
  EXPECT_EQ(rooted["cdiVersion"], "0.5.0");
  for (const char* key : {"annotations", "additionalGids", "intelRdt", "netDevices"}) {
    EXPECT_EQ(render_json(rooted).find(key), std::string::npos) << key;
  }
}

TEST(CdiRender, YamlIsBlockStyleWithQuotedStrings) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(
      R"({"a":"x: \"y\"\n","b":[1,"two"],"c":[{"d":{"e":[]},"f":{}}],"g-h":[[1],[{"i":true}]],"j":null})");
  EXPECT_EQ(render_yaml(j, "head\n\nline"),
            "# head\n#\n# line\n"
            "a: \"x: \\\"y\\\"\\n\"\n"
            "b: [1, \"two\"]\n"
            "c:\n"
            "- d:\n"
            "    e: []\n"
            "  f: {}\n"
            "\"g-h\":\n"
            "- [1]\n"
            "-\n"
            "  - i: true\n"
            "j: null\n");
  EXPECT_EQ(render_json(nlohmann::ordered_json::parse(R"({"b":1,"a":[]})")), "{\n  \"b\": 1,\n  \"a\": []\n}\n");
}

}  // namespace
}  // namespace gpufrac::cdi
