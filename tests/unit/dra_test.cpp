#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "cdi/spec_file.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "k8s/claim.hpp"
#include "k8s/dra_devices.hpp"
#include "k8s/resource_slices.hpp"
#include "nvml/simulated.hpp"
#include "openapi_check.hpp"
#include "shipped_machines.hpp"

namespace gpufrac::dra {
namespace {

using json = nlohmann::json;

Inventory machine(const std::string& file) {
  return test::shipped_machine(file);
}

std::vector<std::string> machine_files() {
  return test::shipped_machine_files();
}

bool dns_label(const std::string& s) {
  return !s.empty() && s.size() <= 63 &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos && s.front() != '-' &&
         s.back() != '-';
}

MigConfig dynamic_mig() {
  MigConfig mig;
  mig.mode = MigMode::dynamic;
  return mig;
}

// Static MIG (existing instances) and dynamic MIG (every profile at every placement).
TEST(DraSlices, EveryShippedMachinePassesTheSchemaAndTheLimits) {
  for (const auto& [file, mig] : [] {
         std::vector<std::pair<std::string, MigConfig>> all;
         for (const auto& f : machine_files()) all.push_back({f, MigConfig{}}), all.push_back({f, dynamic_mig()});
         return all;
       }()) {
    SCOPED_TRACE(file + (mig.mode == MigMode::dynamic ? " (dynamic MIG)" : ""));
    const Inventory inv = machine(file);
    auto slices = render_resource_slices(inv, {"node-1", "9b2f0c3e-0000-4000-8000-000000000001", 1ull << 30, 3, mig});
    ASSERT_FALSE(slices.empty());
    std::set<std::string> device_names, counter_sets;
    std::size_t devices = 0;
    for (std::size_t i = 0; i < slices.size(); ++i) {
      const json& s = slices[i];
      EXPECT_EQ(testing::openapi_violations(s, "io.k8s.api.resource.v1.ResourceSlice", testing::resource_v1_schemas()),
                std::vector<std::string>{});
      const json& spec = s["spec"];
      EXPECT_EQ(spec["pool"]["resourceSliceCount"], slices.size());
      EXPECT_EQ(spec["pool"]["generation"], 3);
      EXPECT_EQ(spec.contains("devices") + spec.contains("sharedCounters"), 1) << "devices or counters, not both";
      char prefix[24];
      std::snprintf(prefix, sizeof prefix, "%05zx-", i);
      EXPECT_EQ(s["metadata"]["generateName"], std::string(prefix) + "gpufrac.io-node-1-");
      for (const auto& set : spec.value("sharedCounters", json::array())) {
        EXPECT_LE(set["counters"].size(), 32u);
        counter_sets.insert(set["name"].get<std::string>());
      }
      EXPECT_LE(spec.value("sharedCounters", json::array()).size(), kMaxCounterSetsPerSlice);
      EXPECT_LE(spec.value("devices", json::array()).size(), kMaxDevicesPerSlice);
      for (const auto& d : spec.value("devices", json::array())) {
        ++devices;
        EXPECT_TRUE(dns_label(d["name"])) << d["name"];
        EXPECT_TRUE(device_names.insert(d["name"].get<std::string>()).second) << "unique " << d["name"];
        EXPECT_LE(d["attributes"].size() + d["capacity"].size(), 32u);
        for (const auto& c : d["consumesCounters"]) EXPECT_TRUE(counter_sets.count(c["counterSet"].get<std::string>()));
        for (const auto& [name, a] : d["attributes"].items()) EXPECT_EQ(a.size(), 1u) << name;
      }
    }
    EXPECT_EQ(devices, dra_devices(inv, mig).size());
  }
}

TEST(DraSlices, TheSchemaCheckCanFail) {
  auto slices = render_resource_slices(machine("a100-40gb-x1.yaml"), {"node-1", "", 1ull << 30, 1});
  json bad = slices[1];
  bad["spec"]["devices"][0]["allowMultipleAllocation"] = true;               // misspelt
  bad["spec"]["devices"][0]["capacity"]["memory"]["value"] = json::array();  // not a quantity
  bad["spec"]["devices"][0]["attributes"]["index"] = {{"integer", 0}};       // no such attribute type
  bad["spec"]["pool"].erase("name");
  EXPECT_EQ(testing::openapi_violations(bad, "io.k8s.api.resource.v1.ResourceSlice", testing::resource_v1_schemas()),
            (std::vector<std::string>{
                "$.spec.devices[0].allowMultipleAllocation: unknown field",
                "$.spec.devices[0].attributes.index.integer: unknown field",
                "$.spec.devices[0].capacity.memory.value: matches 0 of oneOf",
                "$.spec.pool: missing required name",
            }));
}

TEST(DraSlices, AShareableGpuAndTheRequestPolicy) {
  const Inventory inv = machine("a100-40gb-x1.yaml");
  auto slices = render_resource_slices(inv, {"node-1", "", 1ull << 30, 1});
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["spec"]["sharedCounters"],
            json::parse(R"([{"name":"gpu-0-counters","counters":{"memory":{"value":"40536Mi"}}}])"));
  EXPECT_FALSE(slices[0]["metadata"].contains("ownerReferences"));
  const json& gpu = slices[1]["spec"]["devices"][0];
  EXPECT_EQ(gpu["name"], "gpu-0");
  EXPECT_EQ(gpu["allowMultipleAllocations"], true);
  // max is the largest multiple of the step within the device (the API server's rule).
  EXPECT_EQ(gpu["capacity"]["memory"], json::parse(R"({"value":"40536Mi","requestPolicy":{"default":"1Gi",
      "validRange":{"min":"1Gi","max":"39Gi","step":"1Gi"}}})"));
  // A share of the whole GPU in parts per million, in the form the API server writes back.
  EXPECT_EQ(gpu["capacity"]["fraction"], json::parse(R"({"value":"1M","requestPolicy":{"default":"1",
      "validRange":{"min":"1","max":"1M","step":"1"}}})"));
  // The GPU's time in percent; a claim that asks for none consumes 0 (prepare books its default).
  EXPECT_EQ(gpu["capacity"]["compute"], json::parse(R"({"value":"100","requestPolicy":{"default":"0",
      "validRange":{"min":"0","max":"100","step":"1"}}})"));
  EXPECT_EQ(gpu["attributes"]["uuid"]["string"], inv.gpus[0].uuid);
  EXPECT_EQ(gpu["attributes"]["cudaComputeCapability"]["version"], "8.0.0");
}

TEST(DraSlices, MigInstancesConsumeTheirMemorySlices) {
  const Inventory inv = machine("a100-80gb-mig.yaml");
  auto slices = render_resource_slices(inv, {"node-1", "", 1ull << 30, 1});
  const json& counters = slices[0]["spec"]["sharedCounters"][0]["counters"];
  EXPECT_TRUE(counters.contains("memory-slice-7"));
  bool found = false;
  for (const auto& d : slices.back()["spec"]["devices"]) {
    if (d["attributes"]["type"]["string"] != "mig") continue;
    found = true;
    EXPECT_FALSE(d.contains("allowMultipleAllocations"));
    const auto& c = d["consumesCounters"][0]["counters"];
    std::size_t slices_used = c.size() - 1;
    EXPECT_GE(slices_used, 1u) << d["name"];
  }
  EXPECT_TRUE(found);
  // A GPU in MIG mode is not offered as a shareable device.
  for (const auto& d : slices.back()["spec"]["devices"]) EXPECT_NE(d["name"], "gpu-0");
}

// The documents of a manifest as JSON, through the CDI reader's YAML 1.1 conversion.
std::vector<json> manifest_documents(const std::string& file) {
  auto text = fs::read_file(std::string(GPUFRAC_SOURCE_DIR) + "/deploy/" + file);
  EXPECT_TRUE(text) << file;
  std::vector<std::string> docs(1);
  for (const auto& line : text::split(*text, '\n')) {
    if (line == "---")
      docs.emplace_back();
    else
      docs.back() += line + "\n";
  }
  std::vector<json> out;
  for (const auto& doc : docs) {
    auto j = cdi::parse_spec_text(doc, file);
    EXPECT_TRUE(j) << j.error().message;
    if (j && !j->is_null()) out.push_back(json::parse(j->dump()));
  }
  return out;
}

TEST(DraManifests, ResourceObjectsPassTheSchema) {
  const std::map<std::string, std::string> kinds{
      {"DeviceClass", "io.k8s.api.resource.v1.DeviceClass"},
      {"ResourceClaimTemplate", "io.k8s.api.resource.v1.ResourceClaimTemplate"}};
  std::size_t checked = 0;
  for (const char* file : {"kustomize/base/deviceclasses.yaml", "examples/example-claim.yaml"}) {
    for (const json& j : manifest_documents(file)) {
      auto kind = kinds.find(j.value("kind", ""));
      if (kind == kinds.end()) continue;
      EXPECT_EQ(testing::openapi_violations(j, kind->second, testing::resource_v1_schemas()),
                std::vector<std::string>{})
          << file;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4u);
}

TEST(DraQuantity, FormatAndParse) {
  EXPECT_EQ(k8s_quantity(40ull << 30), "40Gi");
  EXPECT_EQ(k8s_quantity(4864ull << 20), "4864Mi");
  EXPECT_EQ(k8s_quantity(1000), "1000");
  EXPECT_EQ(*parse_k8s_quantity("10Gi"), 10ull << 30);
  EXPECT_EQ(*parse_k8s_quantity("1073741824"), 1ull << 30);
  EXPECT_EQ(*parse_k8s_quantity("1.5Gi"), 3ull << 29);
  EXPECT_EQ(*parse_k8s_quantity("4G"), 4000000000ull);
  for (const char* bad : {"", "Gi", "-1Gi", "1.Gi", "0.1", "1e3", "10Xi", "99999999999999999999", "1Ei"})
    EXPECT_FALSE(parse_k8s_quantity(bad)) << bad;
  EXPECT_EQ(parse_k8s_quantity("ten").error().message,
            "\"ten\" is not an amount of memory; use a Kubernetes quantity of bytes, e.g. 10Gi, 4864Mi or 1073741824");
}

// A dynamic-MIG GPU publishes each profile at each placement, consuming exactly its memory
// slices, so the scheduler never hands out two overlapping instances; static GPUs keep theirs.
TEST(DraSlices, DynamicMigPublishesEveryProfileAtEveryPlacement) {
  const Inventory inv = machine("h100-80gb-mig-empty.yaml");
  EXPECT_TRUE(dra_devices(inv).empty()) << "static MIG, no instance: nothing to offer";
  auto slices = render_resource_slices(inv, {"node-1", "", 1ull << 30, 1, dynamic_mig()});
  ASSERT_EQ(slices.size(), 2u);
  const json& devices = slices[1]["spec"]["devices"];
  // 1g.10gb x7, 1g.10gb+me x7, 1g.20gb x4, 2g.20gb x3, 3g.40gb x2, 4g.40gb, 7g.80gb; their smaller
  // compute instances: 2g (1c x2) x3 placements, 3g (1c x3, 2c) x2, 4g (1c x4, 2c x2), 7g (1c x7,
  // 2c x3, 3c x2, 4c): 6 + 8 + 6 + 13.
  ASSERT_EQ(devices.size(), 25u + 33);
  std::map<std::string, json> by_name;
  for (const auto& d : devices) by_name[d["name"]] = d;
  ASSERT_TRUE(by_name.contains("gpu-0-mig-1g10gb-19-6"));
  ASSERT_TRUE(by_name.contains("gpu-0-mig-1g10gbme-20-0"));
  const json& big = by_name["gpu-0-mig-3g40gb-9-4"];
  EXPECT_EQ(big["attributes"], json::parse(R"({"type":{"string":"mig"},"profile":{"string":"3g.40gb"},
      "parentUUID":{"string":")" + inv.gpus[0].uuid +
                                           R"("},"index":{"int":0},"placementStart":{"int":4},
      "computeSlices":{"int":3},"multiprocessors":{"int":60},"profileID":{"int":9}})"));
  EXPECT_EQ(big["capacity"]["memory"]["value"], "40448Mi");
  EXPECT_EQ(big["consumesCounters"][0]["counters"],
            json::parse(R"({"memory":{"value":"40448Mi"},"memory-slice-4":{"value":"1"},"memory-slice-5":{"value":"1"},
                "memory-slice-6":{"value":"1"},"memory-slice-7":{"value":"1"}})"));
  EXPECT_FALSE(big.contains("allowMultipleAllocations"));
  MigConfig only_gpu1 = dynamic_mig();
  only_gpu1.mode = MigMode::static_;
  only_gpu1.gpus["1"] = MigMode::dynamic;
  EXPECT_TRUE(dra_devices(inv, only_gpu1).empty()) << "the override names another GPU";
}

json claim(const std::string& uid, const json& results) {
  return {{"metadata", {{"name", "trainer-gpu"}, {"namespace", "team-a"}, {"uid", uid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
}

constexpr const char* kUid = "2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41";
const ClaimRef kRef{"team-a", "trainer-gpu", kUid};

json result(const std::string& device, const std::string& memory,
            const std::string& share = "0e4f6a1c-3b2d-4c5e-8f70-9a1b2c3d4e5f") {
  json r = {{"request", "gpu/sub"}, {"driver", "gpufrac.io"}, {"pool", "node-1"}, {"device", device}};
  if (!share.empty()) r["shareID"] = share;
  if (!memory.empty()) r["consumedCapacity"] = {{"memory", memory}};
  return r;
}

std::string error_of(const Result<std::vector<ClaimShare>>& r) {
  return r ? "ok" : r.error().message;
}

TEST(DraClaim, SharesOfAnAllocatedClaim) {
  const Inventory inv = machine("a100-40gb-x2.yaml");
  json other = {{"request", "nic"}, {"driver", "net.example.com"}, {"pool", "x"}, {"device", "eth0"}};
  auto shares = claim_shares(claim(kUid, json::array({result("gpu-1", "10Gi"), other})), kRef, "node-1", inv);
  ASSERT_TRUE(shares) << shares.error().message;
  ASSERT_EQ(shares->size(), 1u);
  const ClaimShare& s = (*shares)[0];
  EXPECT_EQ(s.request, "gpu");
  EXPECT_EQ(s.bytes, 10ull << 30);
  EXPECT_EQ(s.device_key(), "gpu-1/0e4f6a1c-3b2d-4c5e-8f70-9a1b2c3d4e5f");
  EXPECT_EQ(s.booking.describe(), "memory=10Gi gpu=1");
  // Without consumable capacity the device is allocated whole.
  auto whole = claim_shares(claim(kUid, json::array({result("gpu-0", "", "")})), kRef, "node-1", inv);
  ASSERT_TRUE(whole);
  EXPECT_EQ((*whole)[0].booking.describe(), "fraction=1 gpu=0");
  EXPECT_EQ((*whole)[0].device_key(), "gpu-0");
}

// consumedCapacity.compute: the percent the claim asked for becomes gpufrac.io/compute; 0 (the
// policy's default: the claim asked for none) leaves the default share to the allocator.
TEST(DraClaim, ConsumedComputeIsBooked) {
  const Inventory inv = machine("a100-40gb-x2.yaml");
  const std::string at = std::string("claim team-a/trainer-gpu (uid ") + kUid +
                         "): status.allocation.devices.results[0].consumedCapacity.compute: ";
  auto with_compute = [](json compute) {
    json r = result("gpu-1", "10Gi");
    r["consumedCapacity"]["compute"] = std::move(compute);
    return claim(kUid, json::array({r}));
  };
  auto shares = claim_shares(with_compute("30"), kRef, "node-1", inv);
  ASSERT_TRUE(shares) << shares.error().message;
  EXPECT_EQ((*shares)[0].booking.describe(), "memory=10Gi compute=30 gpu=1");
  EXPECT_EQ((*shares)[0].booking.compute_ppm, 300'000u);
  shares = claim_shares(with_compute("0"), kRef, "node-1", inv);
  ASSERT_TRUE(shares);
  EXPECT_EQ((*shares)[0].booking.describe(), "memory=10Gi gpu=1");
  shares = claim_shares(with_compute("100"), kRef, "node-1", inv);
  ASSERT_TRUE(shares);
  EXPECT_EQ((*shares)[0].booking.compute_ppm, 1'000'000u);
  for (const char* bad : {"101", "abc", "30.5", "030", "-1", "300m"})
    EXPECT_EQ(error_of(claim_shares(with_compute(bad), kRef, "node-1", inv)),
              at + "\"" + bad + "\" is not a percent of the GPU's time; use an integer 0 to 100 (0: the default share)")
        << bad;
  EXPECT_EQ(error_of(claim_shares(with_compute(30), kRef, "node-1", inv)),
            at + "\"30\" is not a percent of the GPU's time; use an integer 0 to 100 (0: the default share)");
  const Inventory mig = machine("a100-80gb-mig.yaml");
  const auto devices = dra_devices(mig);
  const auto instance =
      std::find_if(devices.begin(), devices.end(), [](const DraDevice& d) { return d.mig != nullptr; });
  ASSERT_NE(instance, devices.end());
  json r = result(instance->name, "", "");
  r["consumedCapacity"] = {{"compute", "30"}};
  EXPECT_EQ(error_of(claim_shares(claim(kUid, json::array({r})), kRef, "node-1", mig)),
            at + "a MIG device owns its share of the GPU's time; ask for compute on gpu-<i>");
}

TEST(DraClaim, MigDeviceIsBookedByItsUuid) {
  const Inventory inv = machine("a100-80gb-mig.yaml");
  const auto devices = dra_devices(inv);
  const auto mig = std::find_if(devices.begin(), devices.end(), [](const DraDevice& d) { return d.mig != nullptr; });
  ASSERT_NE(mig, devices.end());
  auto shares = claim_shares(claim(kUid, json::array({result(mig->name, "", "")})), kRef, "node-1", inv);
  ASSERT_TRUE(shares) << shares.error().message;
  EXPECT_EQ((*shares)[0].booking.gpu->mig_uuid, mig->mig->uuid);
  EXPECT_EQ((*shares)[0].booking.kind, SizeKind::mig_profile);
}

TEST(DraClaim, ProfileDeviceIsBookedAtItsPlacement) {
  const Inventory inv = machine("h100-80gb-mig-empty.yaml");
  auto shares = claim_shares(claim(kUid, json::array({result("gpu-0-mig-1g10gbme-20-3", "", "")})), kRef, "node-1", inv,
                             dynamic_mig());
  ASSERT_TRUE(shares) << shares.error().message;
  EXPECT_TRUE((*shares)[0].dynamic_mig);
  EXPECT_EQ((*shares)[0].booking.describe(), "mig-profile=1g.10gb+me gpu=0 placement=3");
  EXPECT_EQ((*shares)[0].bytes, 9984ull << 20);
  EXPECT_EQ(
      error_of(claim_shares(claim(kUid, json::array({result("gpu-0-mig-1g10gb-19-3", "", "")})), kRef, "node-1", inv)),
      std::string("claim team-a/trainer-gpu (uid ") + kUid +
          "): status.allocation.devices.results[0].device: \"gpu-0-mig-1g10gb-19-3\" is not a device of node-1");
  EXPECT_EQ(error_of(claim_shares(claim(kUid, json::array({result("gpu-0-mig-1g10gb-19-3", "", "abc")})), kRef,
                                  "node-1", inv, dynamic_mig()))
                .substr(std::string("claim team-a/trainer-gpu (uid ").size() + 39),
            "status.allocation.devices.results[0].shareID: \"abc\" on a device allocated whole");
}

TEST(DraClaim, RefusalsNameTheClaimAndTheField) {
  const Inventory inv = machine("a100-40gb-x1.yaml");
  const std::string at = std::string("claim team-a/trainer-gpu (uid ") + kUid + "): ";
  EXPECT_EQ(error_of(claim_shares(claim("other-uid", json::array()), kRef, "node-1", inv)),
            std::string("claim team-a/trainer-gpu: metadata.uid \"other-uid\" is not the kubelet's \"") + kUid +
                "\" (the claim was replaced)");
  json unallocated = claim(kUid, json::array());
  unallocated["status"].erase("allocation");
  EXPECT_EQ(error_of(claim_shares(unallocated, kRef, "node-1", inv)), at + "not allocated (no status.allocation)");
  EXPECT_EQ(error_of(claim_shares(claim(kUid, json::array({result("gpu-7", "1Gi")})), kRef, "node-1", inv)),
            at + "status.allocation.devices.results[0].device: \"gpu-7\" is not a device of node-1");
  json elsewhere = result("gpu-0", "1Gi");
  elsewhere["pool"] = "node-2";
  EXPECT_EQ(error_of(claim_shares(claim(kUid, json::array({elsewhere})), kRef, "node-1", inv)),
            at + "status.allocation.devices.results[0].pool: \"node-2\" is not this node's pool; use \"node-1\"");
  EXPECT_EQ(error_of(claim_shares(claim(kUid, json::array({result("gpu-0", "41Gi")})), kRef, "node-1", inv)),
            at + "status.allocation.devices.results[0].consumedCapacity.memory: 41Gi is beyond gpu-0 (40536Mi)");
  EXPECT_EQ(
      error_of(claim_shares(claim(kUid, json::array({result("gpu-0", "lots")})), kRef, "node-1", inv))
          .substr(0, at.size() + 60),
      (at + "status.allocation.devices.results[0].consumedCapacity.memory: \"lots\" is not").substr(0, at.size() + 60));
  EXPECT_EQ(error_of(claim_shares(claim(kUid, json::array({result("gpu-0", "1Gi", "../x")})), kRef, "node-1", inv)),
            at + "status.allocation.devices.results[0].shareID: \"../x\" is not a UUID");
  json many = json::array();
  for (int i = 0; i < 33; ++i) many.push_back(result("gpu-0", "1Gi"));
  EXPECT_EQ(error_of(claim_shares(claim(kUid, many), kRef, "node-1", inv)), at + "33 allocation results; at most 32");
  EXPECT_EQ(error_of(claim_shares(json::array(), kRef, "node-1", inv)).substr(0, 40),
            "claim team-a/trainer-gpu: metadata.uid \"");
}

}  // namespace
}  // namespace gpufrac::dra
