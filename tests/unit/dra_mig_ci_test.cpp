// gpufrac-dra's compute instance devices (k8s/dra_devices.hpp): published with their share of their
// GPU instance's memory slices and memory, and prepared as compute instances in their GPU instance.
#include <gtest/gtest.h>

#include <map>

#include "k8s/claim.hpp"
#include "k8s/dra_devices.hpp"
#include "k8s/resource_slices.hpp"
#include "nvml/simulated.hpp"
#include "shipped_machines.hpp"

namespace gpufrac::dra {
namespace {

using json = nlohmann::json;

Inventory machine(const std::string& file) {
  return test::shipped_machine(file);
}

MigConfig dynamic_mig() {
  MigConfig mig;
  mig.mode = MigMode::dynamic;
  return mig;
}

constexpr const char* kUid = "2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41";
const ClaimRef kRef{"team-a", "trainer-gpu", kUid};

json claim(const json& results) {
  return {{"metadata", {{"name", "trainer-gpu"}, {"namespace", "team-a"}, {"uid", kUid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
}

json whole(const std::string& device) {
  return {{"request", "gpu"}, {"driver", "gpufrac.io"}, {"pool", "node-1"}, {"device", device}};
}

// Compute instance devices of a dynamic GPU: each takes C/G of its GPU instance's memory slices, so
// the three 1c of a 3g.40gb fit together and a whole 3g.40gb at that placement fits beside none.
TEST(DraSlices, ComputeInstanceDevicesShareTheirGpuInstance) {
  const Inventory inv = machine("h100-80gb-mig-empty.yaml");
  auto slices = render_resource_slices(inv, {"node-1", "", 1ull << 30, 1, dynamic_mig()});
  std::map<std::string, json> by_name;
  for (const auto& d : slices[1]["spec"]["devices"]) by_name[d["name"]] = d;
  const json& one = by_name["gpu-0-mig-1c3g40gb-9-4-2"];
  EXPECT_EQ(one["attributes"]["profile"], json({{"string", "1c.3g.40gb"}}));
  EXPECT_EQ(one["attributes"]["computeSlices"], json({{"int", 1}}));
  EXPECT_FALSE(one["attributes"].contains("multiprocessors")) << "NVML has not told them for a 3g.40gb yet";
  EXPECT_EQ(one["capacity"]["memory"]["value"], "13482Mi");  // the equal split of 40448 MiB
  EXPECT_EQ(one["consumesCounters"][0]["counters"]["memory-slice-4"], json({{"value", "333m"}}));
  EXPECT_FALSE(by_name.contains("gpu-0-mig-1c3g40gb-9-4-3")) << "a 3g.40gb holds three 1c";
  // The scheduler's counter arithmetic on memory slice 4 (milli-units of the counter's 1).
  auto milli = [&](const std::string& device) {
    const std::string v = by_name[device]["consumesCounters"][0]["counters"]["memory-slice-4"]["value"];
    return v == "1" ? 1000 : std::stoi(v.substr(0, v.size() - 1));
  };
  EXPECT_LE(milli("gpu-0-mig-1c3g40gb-9-4-0") + milli("gpu-0-mig-1c3g40gb-9-4-1") + milli("gpu-0-mig-1c3g40gb-9-4-2"),
            1000);
  EXPECT_LE(milli("gpu-0-mig-2c3g40gb-9-4-0") + milli("gpu-0-mig-1c3g40gb-9-4-0"), 1000);
  EXPECT_GT(milli("gpu-0-mig-3g40gb-9-4") + milli("gpu-0-mig-1c3g40gb-9-4-0"), 1000);
  EXPECT_GT(milli("gpu-0-mig-7g80gb-0-0") + milli("gpu-0-mig-1c3g40gb-9-4-0"), 1000);
  // A found split GPU instance (static MIG): each compute instance its equal split and its share.
  const Inventory ci = machine("a100-40gb-mig-ci.yaml");
  const auto ci_slices = render_resource_slices(ci, {"node-1", "", 1ull << 30, 1});  // kept alive for the loop
  int found = 0;
  for (const auto& d : ci_slices[1]["spec"]["devices"])
    if (d["name"] == "gpu-0-mig-2-0" && ++found) {
      EXPECT_EQ(d["attributes"]["profile"], json({{"string", "2c.3g.20gb"}}));
      EXPECT_EQ(d["attributes"]["multiprocessors"], json({{"int", 28}}));
      EXPECT_EQ(d["consumesCounters"][0]["counters"]["memory"], json({{"value", "13Gi"}}));
      EXPECT_EQ(d["consumesCounters"][0]["counters"]["memory-slice-0"], json({{"value", "666m"}}));
    }
  EXPECT_EQ(found, 1) << "gpu-0-mig-2-0 in the second slice";
}

// A compute instance device: a mig-profile request for that compute instance in the GPU instance at
// the device's placement, booking the equal split; two of one GPU instance for one claim are two
// results the provisioner refuses (one compute instance per GPU instance).
TEST(DraClaim, ComputeInstanceDeviceIsBookedInItsGpuInstance) {
  const Inventory inv = machine("h100-80gb-mig-empty.yaml");
  auto shares =
      claim_shares(claim(json::array({whole("gpu-0-mig-1c3g40gb-9-4-1")})), kRef, "node-1", inv, dynamic_mig());
  ASSERT_TRUE(shares) << shares.error().message;
  EXPECT_TRUE((*shares)[0].dynamic_mig);
  EXPECT_EQ((*shares)[0].booking.describe(), "mig-profile=1c.3g.40gb gpu=0 placement=4");
  EXPECT_EQ((*shares)[0].bytes, 13482ull << 20);
  const Inventory ci = machine("a100-40gb-mig-ci.yaml");
  auto found = claim_shares(claim(json::array({whole("gpu-0-mig-2-1")})), kRef, "node-1", ci);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ((*found)[0].booking.describe(), "mig-profile=1c.3g.20gb gpu=MIG-5a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c05");
}

}  // namespace
}  // namespace gpufrac::dra
