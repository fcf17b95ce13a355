#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "nvml/discover.hpp"
#include "scratch_dir.hpp"

namespace gpufrac {
namespace {

Config sim_config(const std::string& machine) {
  Config c = default_config();
  c.nvml.backend = NvmlBackend::simulated;
  c.nvml.machine = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/" + machine;
  c.state_dir = test::scratch_dir("gpufrac-inv");
  c.host_root = c.state_dir + "/root";
  return c;
}

TEST(InventoryJson, RoundTripsEveryField) {
  Config c = sim_config("dgx-8gpu-mixed.yaml");
  auto inv = discover(c);
  ASSERT_TRUE(inv) << inv.error().message;
  auto back = inventory_from_json(nlohmann::json::parse(to_json(*inv).dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->same_hardware(*inv));
  EXPECT_EQ(back->source, inv->source);
}

TEST(InventoryJson, CacheIsWrittenOnFirstUseForSimulated) {
  Config c = sim_config("a100-40gb-x2.yaml");
  auto inv = inventory_for_allocation(c);
  ASSERT_TRUE(inv) << inv.error().message;
  auto cached = read_inventory_cache(c);
  ASSERT_TRUE(cached) << cached.error().message;
  EXPECT_TRUE(cached->same_hardware(*inv));
  EXPECT_EQ(cached->gpus.size(), 2u);
}

TEST(InventoryJson, RealBackendWithoutCacheNamesRefresh) {
  Config c = sim_config("a100-40gb-x2.yaml");
  c.nvml.backend = NvmlBackend::nvml;
  auto inv = inventory_for_allocation(c);
  ASSERT_FALSE(inv);
  EXPECT_NE(inv.error().message.find("gpufrac info --refresh"), std::string::npos);
}

TEST(InventoryJson, CachesWithoutMigCapableStillRead) {
  Config c = sim_config("dgx-8gpu-mixed.yaml");
  auto inv = discover(c);
  ASSERT_TRUE(inv) << inv.error().message;
  nlohmann::json j = to_json(*inv);
  EXPECT_EQ(j["gpus"][0]["mig"]["capable"], true);
  for (auto& g : j["gpus"]) g["mig"].erase("capable");
  auto back = inventory_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_FALSE(back->gpus[0].mig_capable);  // MIG off and no profiles: nothing tells it apart
  EXPECT_TRUE(back->gpus[4].mig_capable);
}

TEST(InventoryJson, RejectsOtherVersion) {
  auto r = inventory_from_json(nlohmann::json{{"version", 99}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--refresh"), std::string::npos);
}

TEST(InventoryJson, SimulatedMajorsStandInWithoutProcDevices) {
  Config c = sim_config("a100-80gb-mig.yaml");
  auto inv = discover(c);
  ASSERT_TRUE(inv);
  EXPECT_EQ(inv->gpus[0].node.major, 195);
  EXPECT_EQ(inv->control_nodes[1].major, 508);
  ASSERT_EQ(inv->gpus[0].mig_instances[0].cap_nodes.size(), 2u);  // simulated driver table stands in
  EXPECT_EQ(inv->gpus[0].mig_instances[0].cap_nodes[0].path, "/dev/nvidia-caps/nvidia-cap12");
}

}  // namespace
}  // namespace gpufrac
