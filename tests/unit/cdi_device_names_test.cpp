#include <gtest/gtest.h>

#include "cdi/cdi_names.hpp"
#include "cdi/device_names.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::cdi {
namespace {

// dgx-8gpu-mixed: GPUs 0-3 whole (80 GiB), 4-5 MIG (3g.40gb, 2g.20gb, 1g.10gb x2), 6 MIG 7x 1g.10gb,
// 7 MIG without instances.
const Inventory& dgx() {
  static const Inventory inv = [] {
    auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/dgx-8gpu-mixed.yaml");
    EXPECT_TRUE(m) << m.error().message;
    return m->inventory;
  }();
  return inv;
}

Request ok(std::string_view name) {
  auto r = request_for_cdi_device(name, dgx());
  EXPECT_TRUE(r) << name << ": " << r.error().message;
  return r ? *r : Request{};
}

std::string refusal(std::string_view name) {
  auto r = request_for_cdi_device(name, dgx());
  EXPECT_FALSE(r) << name << " was accepted as " << r->describe();
  if (r) return "";
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  return r.error().message;
}

TEST(CdiDeviceNames, WholeGpuByIndexAndUuid) {
  EXPECT_EQ(ok("0").describe(), "fraction=1 gpu=0");
  EXPECT_EQ(ok("3").describe(), "fraction=1 gpu=3");
  EXPECT_EQ(ok("GPU-2f8be0ec-efab-3361-bd37-99d69e8c7d55").describe(),
            "fraction=1 gpu=GPU-2f8be0ec-efab-3361-bd37-99d69e8c7d55");
  EXPECT_EQ(ok("gpufrac.io/gpu=1").describe(), "fraction=1 gpu=1");
}

TEST(CdiDeviceNames, Shares) {
  Request r = ok("2-0.25");
  EXPECT_EQ(r.kind, SizeKind::fraction);
  EXPECT_EQ(r.fraction, 250000u);
  EXPECT_EQ(r.gpu, (GpuPin{2, "", ""}));
  EXPECT_EQ(ok("0-0.125").describe(), "fraction=0.125 gpu=0");
  EXPECT_EQ(ok("0-4Gi").describe(), "memory=4Gi gpu=0");
  EXPECT_EQ(ok("0-1536Mi").memory_bytes, 1536ull << 20);
  EXPECT_EQ(ok("1-4G").memory_bytes, 4'000'000'000ull);
  EXPECT_EQ(ok("gpufrac.io/gpu=3-0.5").describe(), "fraction=0.5 gpu=3");
}

TEST(CdiDeviceNames, SmShares) {
  Request r = ok("1-sm30");
  EXPECT_EQ(r.compute_mode, ComputeMode::sm);
  EXPECT_EQ(r.compute_ppm, 300'000u);
  EXPECT_EQ(r.fraction, 300'000u);
  EXPECT_EQ(r.gpu, (GpuPin{1, "", ""}));
  EXPECT_EQ(r.describe(), "compute=30 compute-mode=sm gpu=1");
  EXPECT_EQ(sm_share_name(dgx().gpus[2], 70), "2-sm70");
  const std::string form =
      " is not a percent of the GPU's SMs; use <gpu>-sm<percent>, an integer 1 to 100 without "
      "leading zeros, e.g. 0-sm30";
  EXPECT_EQ(refusal("0-sm0"), "CDI device \"0-sm0\": \"0\"" + form);
  EXPECT_EQ(refusal("0-sm030"), "CDI device \"0-sm030\": \"030\"" + form);
  EXPECT_EQ(refusal("0-sm101"), "CDI device \"0-sm101\": \"101\"" + form);
  EXPECT_EQ(refusal("4-sm30"),
            "CDI device \"4-sm30\": GPU 4 is in MIG mode: its memory belongs to its MIG instances; "
            "use 4:<mig> or MIG-<uuid>");
}

TEST(CdiDeviceNames, MigByPositionAndUuid) {
  Request r = ok("4:0");
  EXPECT_EQ(r.kind, SizeKind::mig_profile);
  EXPECT_EQ(r.mig_profile, "3g.40gb");
  EXPECT_EQ(r.gpu, (GpuPin{4, "", "MIG-1cd67efc-5096-ec5a-d715-8bd1a717ea38"}));
  EXPECT_EQ(ok("4:3").describe(), "mig-profile=1g.10gb gpu=MIG-d426f19c-98ee-9c17-d2a6-4bb2b786e6cd");
  EXPECT_EQ(ok("6:6").describe(), "mig-profile=1g.10gb gpu=MIG-8b72ab28-61bb-6a6f-649d-e35c095b73f5");  // gi 13
  EXPECT_EQ(ok("MIG-667b44dc-85d5-9f60-2270-cc05388e2cea").describe(),
            "mig-profile=2g.20gb gpu=MIG-667b44dc-85d5-9f60-2270-cc05388e2cea");
  EXPECT_EQ(ok("MIG-667b44dc-85d5-9f60-2270-cc05388e2cea").gpu->index, 5u);
}

TEST(CdiDeviceNames, RefusesWhatTheNodeDoesNotOffer) {
  EXPECT_EQ(refusal("9"), "CDI device \"9\": GPU 9 is not on this node (it has GPU 0, 1, 2, 3, 4, 5, 6, 7)");
  EXPECT_EQ(refusal("4"),
            "CDI device \"4\": GPU 4 is in MIG mode: its memory belongs to its MIG instances; use 4:<mig> or "
            "MIG-<uuid>");
  EXPECT_EQ(refusal("4-0.25"), refusal("4").replace(12, 1, "4-0.25"));
  EXPECT_EQ(refusal("GPU-7d41e079-8f1a-4893-abeb-5e3216abe30b"),
            "CDI device \"GPU-7d41e079-8f1a-4893-abeb-5e3216abe30b\": GPU 4 is in MIG mode: its memory belongs to its "
            "MIG instances; use 4:<mig> or MIG-<uuid>");
  EXPECT_EQ(refusal("0:0"), "CDI device \"0:0\": GPU 0 is not in MIG mode; use 0 or 0-<fraction>");
  EXPECT_EQ(refusal("4:4"), "CDI device \"4:4\": GPU 4 has 4 MIG instances (4:0 to 4:3)");
  EXPECT_EQ(refusal("7:0"), "CDI device \"7:0\": GPU 7 has no MIG instance");
  EXPECT_EQ(refusal("GPU-00000000-0000-0000-0000-000000000000"),
            "CDI device \"GPU-00000000-0000-0000-0000-000000000000\": no such GPU on this node; run gpufrac info "
            "--refresh, then gpufrac cdi generate");
  EXPECT_EQ(refusal("MIG-00000000-0000-0000-0000-000000000000"),
            "CDI device \"MIG-00000000-0000-0000-0000-000000000000\": no such MIG instance on this node; run gpufrac "
            "info --refresh, then gpufrac cdi generate");
  EXPECT_EQ(refusal("0-80Gi"),
            "CDI device \"0-80Gi\": 80Gi is not less than GPU 0's 80.0 GiB; a whole GPU is device 0");
  EXPECT_EQ(refusal("0-1"), "CDI device \"0-1\": a whole GPU is device 0");
  EXPECT_EQ(refusal("all"),
            "CDI device \"all\": names every device of the node; it books each member (cdi_device_members) on its "
            "own");
}

TEST(CdiDeviceNames, StrictGrammar) {
  const std::string forms =
      "; use <gpu>, GPU-<uuid>, <gpu>:<mig>, MIG-<uuid>, <gpu>-<fraction>, <gpu>-<memory> or <gpu>-sm<percent> as "
      "gpufrac cdi list prints them, e.g. 0, 0:1, 0-0.25, 0-4Gi or 0-sm30";
  EXPECT_EQ(refusal("0-0.250"), "CDI device \"0-0.250\": \"0.250\" is not canonical; use 0-0.25");
  EXPECT_EQ(refusal("0-4096Mi"), "CDI device \"0-4096Mi\": \"4096Mi\" is not canonical; use 0-4Gi");
  EXPECT_EQ(refusal("0-4096"), "CDI device \"0-4096\": \"4096\" is not canonical; use 0-4Gi");
  EXPECT_EQ(refusal("00"), "CDI device \"00\": does not start with a GPU index" + forms);
  EXPECT_EQ(refusal("gpu0"), "CDI device \"gpu0\": does not start with a GPU index" + forms);
  EXPECT_EQ(refusal("0_1"), "CDI device \"0_1\": unexpected \"_\" after the GPU index" + forms);
  EXPECT_EQ(refusal("0:01"), "CDI device \"0:01\": \"01\" is not a MIG instance position" + forms);
  EXPECT_EQ(refusal("0-0.3x"),
            "CDI device \"0-0.3x\": \"0.3x\" is not a fraction; use a decimal 0 < f <= 1 with at most 6 decimals, e.g. "
            "0.25" +
                forms);
  EXPECT_EQ(refusal("0-"), "CDI device \"0-\": it does not end with a letter or digit" + forms);
  EXPECT_EQ(refusal("0 "), "CDI device \"0 \": it does not end with a letter or digit" + forms);
  EXPECT_EQ(refusal("0;rm"), "CDI device \"0;rm\": it contains \";\"" + forms);
  EXPECT_EQ(refusal(""), "CDI device \"\": the name is empty" + forms);
  EXPECT_EQ(
      refusal("GPU-2F8BE0EC-EFAB-3361-BD37-99D69E8C7D55"),
      "CDI device \"GPU-2F8BE0EC-EFAB-3361-BD37-99D69E8C7D55\": not a GPU UUID (lower-case hex, 8-4-4-4-12)" + forms);
  EXPECT_EQ(refusal("nvidia.com/gpu=0"), "CDI device \"nvidia.com/gpu=0\": kind nvidia.com/gpu is not gpufrac.io/gpu");
  EXPECT_EQ(refusal("g/gpu=0"),
            "CDI device \"g/gpu=0\": kind \"g/gpu\": vendor \"g\" has one character (podman 4.3.1 panics on it); use "
            "vendor/class, each at least 2 characters: a letter first, a letter or digit last, letters, digits, '_', "
            "'.' or '-' between, e.g. gpufrac.io/gpu");
  EXPECT_EQ(refusal(std::string(200, '1')).substr(0, 14), "CDI device \"11");
  EXPECT_NE(refusal(std::string(200, '1')).find("too long (at most 128 bytes)"), std::string::npos);
}

TEST(CdiDeviceNames, AllExpandsToEveryWholeGpuAndMigInstance) {
  auto members = cdi_device_members("all", dgx());
  ASSERT_TRUE(members) << members.error().message;
  std::vector<std::string> want = {"0",   "1",   "2",   "3",   "4:0", "4:1", "4:2", "4:3", "5:0", "5:1",
                                   "5:2", "5:3", "6:0", "6:1", "6:2", "6:3", "6:4", "6:5", "6:6"};
  EXPECT_EQ(*members, want);
  for (const auto& m : *members) EXPECT_TRUE(request_for_cdi_device(m, dgx())) << m;
  EXPECT_EQ(*cdi_device_members("gpufrac.io/gpu=0-0.25", dgx()), std::vector<std::string>{"0-0.25"});
  EXPECT_EQ(cdi_device_members("8", dgx()).error().message,
            "CDI device \"8\": GPU 8 is not on this node (it has GPU 0, 1, 2, 3, 4, 5, 6, 7)");
}

TEST(CdiDeviceNames, NamesGenerateGives) {
  const Gpu& g = dgx().gpus[2];
  EXPECT_EQ(whole_gpu_name(g), "2");
  EXPECT_EQ(mig_name(dgx().gpus[6], 3), "6:3");
  EXPECT_EQ(fraction_share_name(g, 125000), "2-0.125");
  EXPECT_EQ(memory_share_name(g, 4ull << 30), "2-4Gi");
  EXPECT_EQ(memory_share_name(g, 1536ull << 20), "2-1536Mi");
  EXPECT_EQ(memory_share_name(g, 4'000'000'000ull), "2-4G");
  EXPECT_EQ(memory_share_name(g, 1001), std::nullopt);
  EXPECT_EQ(format_memory(3ull << 40), "3Ti");
  EXPECT_EQ(format_memory(5000), "5k");
}

TEST(CdiNames, KindAndQualifiedName) {
  auto q = parse_qualified_name("gpufrac.io/gpu=0-0.25");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->kind.vendor, "gpufrac.io");
  EXPECT_EQ(q->kind.klass, "gpu");
  EXPECT_EQ(q->name, "0-0.25");
  EXPECT_EQ(q->str(), "gpufrac.io/gpu=0-0.25");
  EXPECT_TRUE(parse_kind("vendor.com/x.y"));  // a dot in the class: valid, needs cdiVersion 0.6.0
  EXPECT_EQ(parse_kind("gpufrac.io").error().message.substr(0, 38), "kind \"gpufrac.io\" has no '/'; use vend");
  EXPECT_EQ(vendor_problem("1abc"), "vendor \"1abc\" does not start with a letter");
  EXPECT_EQ(class_problem("gp-"), "class \"gp-\" does not end with a letter or digit");
  EXPECT_EQ(class_problem("g/u"), "class \"g/u\" contains \"/\"");
  EXPECT_EQ(class_problem(""), "class is empty");
  EXPECT_EQ(device_name_problem("a"), "");
  EXPECT_EQ(device_name_problem("4:0"), "");
  EXPECT_EQ(device_name_problem("_a"), "it does not start with a letter or digit");
  EXPECT_EQ(parse_qualified_name("gpufrac.io/gpu").error().message,
            "\"gpufrac.io/gpu\" is not a CDI device name; use vendor/class=name, e.g. gpufrac.io/gpu=0-0.25");
}

}  // namespace
}  // namespace gpufrac::cdi

namespace gpufrac::cdi {
namespace {

// a100-40gb-mig-ci: 3g.20gb@4 split 1c x3 (gi 1), 3g.20gb@0 split 2c + 1c (gi 2). Every compute
// instance is a MIG device with its own position; `all` takes one per GPU instance.
TEST(CdiDeviceNames, ComputeInstancesAreMigDevices) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/a100-40gb-mig-ci.yaml");
  ASSERT_TRUE(m) << m.error().message;
  const Inventory& inv = m->inventory;
  auto r = request_for_cdi_device("0:1", inv);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->describe(), "mig-profile=1c.3g.20gb gpu=MIG-2a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c02");
  EXPECT_EQ(request_for_cdi_device("gpufrac.io/gpu=0:3", inv)->mig_profile, "2c.3g.20gb");
  EXPECT_EQ(request_for_cdi_device("MIG-5a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c05", inv)->mig_profile, "1c.3g.20gb");
  EXPECT_EQ(request_for_cdi_device("0:5", inv).error().message,
            "CDI device \"0:5\": GPU 0 has 5 MIG instances (0:0 to 0:4)");
  EXPECT_EQ(*cdi_device_members("all", inv), (std::vector<std::string>{"0:0", "0:3"}));
}

}  // namespace
}  // namespace gpufrac::cdi
