#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/status_model.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::cli {
namespace {

Inventory machine(const std::string& file) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/" + file);
  EXPECT_TRUE(m);
  return m->inventory;
}

LedgerEntry entry(const std::string& id, const std::string& device, std::uint64_t bytes, std::int64_t pid,
                  std::int64_t created) {
  LedgerEntry e;
  e.container_id = id;
  e.device_uuid = device;
  e.gpu_uuid = device.starts_with("GPU-") ? device : "GPU-0503783c-98ec-041d-cab1-624a56556d11";
  e.bytes = bytes;
  e.request = "fraction=0.25";
  e.pid = pid;
  e.pid_start = pid ? 1 : 0;
  e.created = created;
  return e;
}

std::string state_of(const LedgerEntry& e) {
  return e.pending() ? "pending" : "running";
}

TEST(StatusModel, SharesPerGpuTable) {
  auto inv = machine("a100-40gb-x2.yaml");
  LedgerState ledger{{entry("b", inv.gpus[0].uuid, 10134 * kMiB, 42, 1000),
                      entry("a", inv.gpus[0].uuid, 4 * kGiB, 0, 990),
                      entry("ghost", "GPU-11111111-1111-1111-1111-111111111111", kGiB, 7, 900)}};
  auto report = build_status(inv, ledger, AllocationConfig{}, 1125, state_of);
  ASSERT_EQ(report.devices.size(), 2u);
  EXPECT_EQ(report.devices[0].reserved, 10134 * kMiB + 4 * kGiB);
  EXPECT_EQ(report.devices[0].free, 40536 * kMiB - 10134 * kMiB - 4 * kGiB);
  EXPECT_EQ(
      render_status(report),
      "GPU  DEVICE                 UUID                                      TOTAL     RESERVED  FREE      SHARES\n"
      "0    NVIDIA A100-SXM4-40GB  GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5  39.6 GiB  13.9 GiB  25.7 GiB  2\n"
      "1    NVIDIA A100-SXM4-40GB  GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c  39.6 GiB  0 B       39.6 GiB  0\n"
      "\n"
      "Shares\n"
      "DEVICE                                                       CONTAINER  REQUEST        BYTES    SOURCE  PID  "
      "STATE    AGE\n"
      "GPU 0                                                        a          fraction=0.25  4.0 GiB  hook    -    "
      "pending  2m15s\n"
      "GPU 0                                                        b          fraction=0.25  9.9 GiB  hook    42   "
      "running  2m05s\n"
      "GPU-11111111-1111-1111-1111-111111111111 (not on this node)  ghost      fraction=0.25  1.0 GiB  hook    7    "
      "running  3m45s\n");
}

TEST(StatusModel, MigInstancesAndUsageColumn) {
  auto inv = machine("a100-80gb-mig.yaml");
  LedgerEntry e = entry("m", "MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e", 9728 * kMiB, 9, 0);
  e.mig = MigRef{9, 0, "1g.10gb"};
  e.exclusive = true;
  e.request = "mig-profile=1g.10gb";
  auto report = build_status(inv, LedgerState{{e}}, AllocationConfig{}, 7200, state_of,
                             [](const LedgerEntry&) { return std::optional<std::uint64_t>(kGiB); });
  EXPECT_EQ(
      render_status(report),
      "GPU  DEVICE                            UUID                                      TOTAL     RESERVED  FREE"
      "      SHARES\n"
      "0    NVIDIA A100-SXM4-80GB (MIG mode)  GPU-0503783c-98ec-041d-cab1-624a56556d11  80.0 GiB  -         -"
      "         -\n"
      "0    MIG 3g.40gb gi 1 ci 0             MIG-4abe8dfe-56e0-1af9-c15d-053625ecbfe1  39.2 GiB  0 B       39.2 GiB"
      "  0\n"
      "0    MIG 2g.20gb gi 5 ci 0             MIG-f78d0c02-39a7-012e-4893-522a41e2242b  19.5 GiB  0 B       19.5 GiB"
      "  0\n"
      "0    MIG 1g.10gb gi 9 ci 0             MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e  9.5 GiB   9.5 GiB   0 B"
      "       1\n"
      "0    MIG 1g.10gb gi 10 ci 0            MIG-6ab7d7ee-fc32-0d24-eb1d-a652742cd522  9.5 GiB   0 B       9.5 GiB"
      "   0\n"
      "\n"
      "Shares\n"
      "DEVICE           CONTAINER  REQUEST              BYTES    SOURCE  PID  STATE    AGE    USED\n"
      "GPU 0 gi 9 ci 0  m          mig-profile=1g.10gb  9.5 GiB  hook    9    running  2h00m  1.0 GiB\n");
  auto j = status_json(report);
  EXPECT_EQ(j["devices"][3]["type"], "mig");
  EXPECT_EQ(j["devices"][3]["mig"]["gi"], 9);
  EXPECT_EQ(j["devices"][3]["shares"][0]["used_bytes"], kGiB);
  EXPECT_EQ(j["devices"][0]["mig_mode"], true);
}

TEST(StatusModel, OvercommitAndEmpty) {
  auto inv = machine("a100-40gb-x2.yaml");
  AllocationConfig cfg;
  cfg.overcommit = 1.5;
  auto report = build_status(inv, LedgerState{}, cfg, 0, state_of);
  EXPECT_EQ(report.devices[0].capacity, 60804 * kMiB);
  auto text = render_status(report);
  EXPECT_TRUE(text.starts_with("Overcommit 1.50: FREE counts up to TOTAL x overcommit\n\n")) << text;
  EXPECT_TRUE(text.ends_with("\nNo shares.\n")) << text;
  EXPECT_EQ(status_json(report)["devices"][1]["free"], 60804 * kMiB);
}

TEST(StatusModel, Ages) {
  EXPECT_EQ(format_age(0), "0s");
  EXPECT_EQ(format_age(59), "59s");
  EXPECT_EQ(format_age(125), "2m05s");
  EXPECT_EQ(format_age(3600 * 3 + 120), "3h02m");
  EXPECT_EQ(format_age(86400 * 2 + 3600 * 3), "2d03h");
}

}  // namespace
}  // namespace gpufrac::cli
