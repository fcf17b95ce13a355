#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>

#include "cli/status_model.hpp"
#include "cli/status_render.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "nvml/simulated.hpp"
#include "shipped_machines.hpp"

namespace gpufrac::cli {
namespace {

Inventory machine(const std::string& file) {
  return test::shipped_machine(file);
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

// The plain form (no colour) is compared byte for byte with tests/fixtures/status/<name>.txt.
// After an intended change: GPUFRAC_UPDATE_GOLDEN=1 <build>/bin/cli_status_test, then review the diff.
void expect_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(GPUFRAC_SOURCE_DIR) + "/tests/fixtures/status/" + name + ".txt";
  if (std::getenv("GPUFRAC_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(fs::write_file_atomic(path, text));
  }
  auto golden = fs::read_file(path);
  ASSERT_TRUE(golden) << golden.error().message << " (GPUFRAC_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(text, *golden) << "differs from " << path;
}

StatusReport two_gpus_report() {
  auto inv = machine("a100-40gb-x2.yaml");
  LedgerState ledger{{entry("b8d1e0f2a3c4b5d6e7f8", inv.gpus[0].uuid, 10134 * kMiB, 42, 1000),
                      entry("a", inv.gpus[0].uuid, 4 * kGiB, 0, 990),
                      entry("ghost", "GPU-11111111-1111-1111-1111-111111111111", kGiB, 7, 900)}};
  return build_status(inv, ledger, AllocationConfig{}, 1125, state_of, [](const LedgerEntry& e) {
    return e.pending() ? std::nullopt : std::optional<std::uint64_t>(3 * kGiB);
  });
}

TEST(StatusModel, SharesPerGpu) {
  auto report = two_gpus_report();
  ASSERT_EQ(report.devices.size(), 2u);
  EXPECT_EQ(report.devices[0].reserved, 10134 * kMiB + 4 * kGiB);
  EXPECT_EQ(report.devices[0].free, 40536 * kMiB - 10134 * kMiB - 4 * kGiB);
  expect_golden("two-gpus", render_status(report));
  expect_golden("two-gpus-no-trunc", render_status(report, StatusStyle{false, true, 60}));
}

// A share of two GPUs (gpufrac.io/gpus: 2, device keys gpus/0 and gpus/1) is one line naming both
// GPUs and each GPU's booking; each GPU counts it once; JSON lists it under each GPU with both.
TEST(StatusModel, MultiGpuShareIsOneLine) {
  auto inv = machine("a100-40gb-x2.yaml");
  auto on = [&](const std::string& id, std::uint32_t gpu, const std::string& key, std::uint64_t bytes) {
    LedgerEntry e = entry(id, inv.gpus[gpu].uuid, bytes, 42, 1000);
    e.gpu_index = gpu;
    e.device_key = key;
    e.request = key.empty() ? "fraction=0.25" : "fraction=0.5 gpus=2";
    return e;
  };
  LedgerState ledger{
      {on("tp", 0, "gpus/0", 20268 * kMiB), on("tp", 1, "gpus/1", 20268 * kMiB), on("nb", 1, "", 10134 * kMiB)}};
  auto report = build_status(inv, ledger, AllocationConfig{}, 1125, state_of,
                             [](const LedgerEntry&) { return std::optional<std::uint64_t>(kGiB); });
  ASSERT_EQ(report.devices.size(), 2u);
  EXPECT_EQ(report.devices[0].shares.size(), 1u);
  EXPECT_EQ(report.devices[1].shares.size(), 2u);
  EXPECT_EQ(report.devices[1].reserved, 30402 * kMiB);
  const std::string text = render_status(report);
  expect_golden("multi-gpu", text);
  const auto j = status_json(report);
  EXPECT_EQ(j["devices"][0]["shares"][0]["gpus"].dump(), "[0,1]");
  for (const auto& sh : j["devices"][1]["shares"])
    EXPECT_EQ(sh.contains("gpus") ? sh["gpus"].dump() : "none", sh["container_id"] == "tp" ? "[0,1]" : "none");
}

TEST(StatusModel, MigInstancesAndUsage) {
  auto inv = machine("a100-80gb-mig.yaml");
  LedgerEntry e = entry("m", "MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e", 9728 * kMiB, 9, 0);
  e.mig = MigRef{9, 0, "1g.10gb"};
  e.exclusive = true;
  e.request = "mig-profile=1g.10gb";
  LedgerState ledger{{e}, {{"MIG-6ab7d7ee-fc32-0d24-eb1d-a652742cd522", inv.gpus[0].uuid, 7000}}};
  auto report = build_status(inv, ledger, AllocationConfig{}, 7200, state_of,
                             [](const LedgerEntry&) { return std::optional<std::uint64_t>(kGiB); });
  expect_golden("mig", render_status(report));
  auto j = status_json(report);
  EXPECT_EQ(j["devices"][3]["type"], "mig");
  EXPECT_EQ(j["devices"][3]["mig"]["gi"], 9);
  EXPECT_EQ(j["devices"][3]["shares"][0]["used_bytes"], kGiB);
  EXPECT_EQ(j["devices"][0]["mig_mode"], true);
  EXPECT_EQ(j["devices"][4]["state"], "idle");
}

// Where the driver holds a share's limit, each share says who holds its own (ENFORCED BY, the last
// column, after the compute columns); its used bytes are what the usage function gives (the
// driver's currentUsed, cli/node_view.cpp).
TEST(StatusModel, EnforcementPerShare) {
  auto inv = machine("h100-80gb-x3-r615.yaml");
  LedgerEntry driven = entry("d", inv.gpus[0].uuid, 20 * kGiB, 42, 1000);
  driven.driver_limit = DriverLimit{"/sys/fs/cgroup/d", 20 * kGiB, 20 * kGiB};
  driven.compute_ppm = 250'000;  // allocation.compute: managed, as most shares are
  LedgerEntry shim = entry("s", inv.gpus[1].uuid, kGiB, 43, 1000);
  shim.compute_ppm = 12'560;
  LedgerState ledger{{driven, shim}};
  auto report = build_status(
      inv, ledger, AllocationConfig{}, 1125, state_of,
      [](const LedgerEntry& e) { return std::optional<std::uint64_t>(e.driver_limit ? 7 : 3); },
      [](const LedgerEntry& e) { return e.driver_limit ? std::optional<std::uint32_t>(240'000) : std::nullopt; });
  expect_golden("driver-limits", render_status(report));
  auto j = status_json(report);
  EXPECT_EQ(j["devices"][0]["shares"][0]["enforcement"], "driver");
  EXPECT_EQ(j["devices"][0]["shares"][0]["compute"], 250'000);
  EXPECT_EQ(j["devices"][0]["shares"][0]["compute_achieved_ppm"], 240'000);
  EXPECT_EQ(j["devices"][0]["shares"][0]["used_bytes"], 7);
  EXPECT_EQ(j["devices"][0]["shares"][0]["driver_limit"]["cgroup"], "/sys/fs/cgroup/d");
  EXPECT_EQ(j["devices"][1]["shares"][0]["enforcement"], "shim");
  EXPECT_EQ(render_status(two_gpus_report()).find("ENFORCED BY"), std::string::npos) << "no driver limit: no column";
}

// A GPU instance split into compute instances: each compute instance with its own booking, the
// GPU instance's memory their bookings share, and a table of the split GPU instances.
TEST(StatusModel, ComputeInstancesShareTheirGpuInstance) {
  auto inv = machine("a100-40gb-mig-ci.yaml");
  LedgerEntry a = entry("a", "MIG-1a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c01", 6656 * kMiB, 9, 0);
  a.mig = MigRef{1, 0, "1c.3g.20gb"};
  a.gpu_uuid = inv.gpus[0].uuid;
  a.exclusive = true;
  a.request = "mig-profile=1c.3g.20gb";
  LedgerEntry b = a;
  b.container_id = "b";
  b.device_uuid = "MIG-2a6f3c21-7d4e-5b89-a1c2-3e4f5a6b7c02";
  b.mig = MigRef{1, 1, "1c.3g.20gb"};
  b.bytes = 8 * kGiB;
  b.request = "mig-profile=1c.3g.20gb memory=8Gi";
  auto report = build_status(inv, LedgerState{{a, b}, {}}, AllocationConfig{}, 60, state_of);
  expect_golden("mig-ci", render_status(report));
  auto j = status_json(report);
  EXPECT_EQ(j["devices"][1]["mig"]["profile"], "1c.3g.20gb");
  EXPECT_EQ(j["devices"][1]["multiprocessors"], 14);
  EXPECT_EQ(j["devices"][3]["reserved"], 0);
  EXPECT_EQ(j["devices"][3]["free"], (19968 - 6656 - 8192) * kMiB);  // what is left of GI 1 to it
  EXPECT_EQ(j["devices"][3]["gpu_instance"], nlohmann::json({{"gi", 1},
                                                             {"profile", "3g.20gb"},
                                                             {"total", 19968 * kMiB},
                                                             {"reserved", (6656 + 8192) * kMiB},
                                                             {"free", (19968 - 6656 - 8192) * kMiB}}));
  EXPECT_EQ(j["devices"][4]["mig"]["profile"], "2c.3g.20gb");
  EXPECT_EQ(j["devices"][4]["multiprocessors"], 28);
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

// Cells in proportion to bytes: a quarter share using half of it on a 40-cell bar is 5 used cells
// and 5 reserved ones; overcommitted devices scale to what is reserved.
TEST(StatusRender, Bars) {
  DeviceStatus d;
  d.total = 400;
  d.shares = {ShareStatus{entry("x", "GPU-a", 100, 1, 0), "running", 0, 50},
              ShareStatus{entry("y", "GPU-a", 200, 0, 0), "pending", 0, std::nullopt}};
  StatusStyle plain{false, false, 40};
  EXPECT_EQ(memory_bar(d, plain), "[AAAAAaaaaabbbbbbbbbbbbbbbbbbbb..........]");
  d.reserved = 800;
  d.shares.push_back(ShareStatus{entry("z", "GPU-a", 500, 1, 0), "running", 0, 500});
  EXPECT_EQ(memory_bar(d, plain), "[AAAaabbbbbbbbbbCCCCCCCCCCCCCCCCCCCCCCCCC]");
  d.total = 0;
  d.reserved = 0;
  d.shares.clear();
  EXPECT_EQ(memory_bar(d, plain), "[........................................]");
  EXPECT_EQ(share_label(0), "A");
  EXPECT_EQ(share_label(25), "Z");
  EXPECT_EQ(share_label(26), "#");
}

TEST(StatusRender, ColourOnlyWhenAsked) {
  auto report = two_gpus_report();
  const std::string plain = render_status(report);
  EXPECT_EQ(plain.find('\033'), std::string::npos);
  const std::string coloured = render_status(report, StatusStyle{true, false, 60});
  EXPECT_NE(coloured.find("\033[1;97;43mBBBBB\033[0m\033[33mbbbb"), std::string::npos) << coloured;  // B's cells
  EXPECT_NE(coloured.find("\033[1;33mB\033[0m"), std::string::npos) << coloured;  // its label in the table
  EXPECT_NE(coloured.find("\033[32mrunning\033[0m"), std::string::npos) << coloured;
  // The same text once the colour sequences are taken out: columns stay aligned.
  std::string stripped;
  for (std::size_t i = 0; i < coloured.size(); ++i) {
    if (coloured[i] == '\033') {
      while (coloured[i] != 'm') ++i;
      continue;
    }
    stripped += coloured[i];
  }
  EXPECT_EQ(stripped, plain);
}

TEST(StatusRender, ShortIds) {
  EXPECT_EQ(short_id("3f2a9c1e7d44aa55", false), "3f2a9c1e7d44");
  EXPECT_EQ(short_id("3f2a9c1e7d44aa55", true), "3f2a9c1e7d44aa55");
  EXPECT_EQ(short_id("GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5", false), "GPU-d7dabd4b");
  EXPECT_EQ(short_id("web", false), "web");
  EXPECT_EQ(short_id("demo-sleeper-1", false), "demo-sleeper-1");  // a name, not a generated id
}

TEST(StatusRender, ClaimOwnedSharesBesideContainers) {
  auto inv = machine("a100-40gb-x1.yaml");
  const std::string gpu = inv.gpus[0].uuid;
  LedgerEntry claim = entry("2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41", gpu, 10ull << 30, 0, 1000);
  claim.source = BookingSource::dra;
  claim.claim = "team-a/trainer-gpu";
  claim.instance = "dra";
  claim.device_key = "gpu-0/0e4f6a1c";
  claim.request = "memory=10Gi gpu=0";
  LedgerState ledger{{entry("web", gpu, 5ull << 30, 42, 1100), claim}, {}};
  auto report = build_status(inv, ledger, AllocationConfig{}, 1200,
                             [](const LedgerEntry& e) { return e.claim_owned() ? "prepared" : "running"; });
  const std::string text = render_status(report);
  EXPECT_NE(text.find("team-a/trainer-gpu (2f9c3a52)  gpu-0/0e4f6a1c  memory=10Gi gpu=0"), std::string::npos) << text;
  EXPECT_NE(text.find("dra "), std::string::npos) << text;
  EXPECT_NE(text.find("prepared"), std::string::npos) << text;
  EXPECT_NE(render_status(report, StatusStyle{false, true, 60})
                .find("team-a/trainer-gpu (2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41)"),
            std::string::npos);
  auto j = status_json(report);
  EXPECT_EQ(j["devices"][0]["shares"][0]["claim"], "team-a/trainer-gpu");
  EXPECT_EQ(j["devices"][0]["shares"][0]["state"], "prepared");
}

// Compute shares: the GPU's time booked per GPU and per share (with a mode or priority other than
// the defaults), the time a share achieved where known and "-" elsewhere; a GPU used whole has none
// free. The COMPUTE columns appear only once a booking holds a compute share (two-gpus.txt has none).
TEST(StatusModel, ComputeShares) {
  auto inv = machine("a100-40gb-x2.yaml");
  LedgerEntry web = entry("web", inv.gpus[0].uuid, 10134 * kMiB, 42, 1000);
  web.compute_ppm = 250'000;
  LedgerEntry batch = entry("batch", inv.gpus[0].uuid, 4 * kGiB, 43, 1010);
  batch.request = "memory=4Gi compute=30 compute-mode=strict priority=high";
  batch.compute_ppm = 300'000;
  batch.compute_mode = ComputeMode::strict;
  batch.priority = ComputePriority::high;
  LedgerEntry whole = entry("whole", inv.gpus[1].uuid, 40536 * kMiB, 44, 1020);
  whole.request = "fraction=1";
  whole.exclusive = true;
  whole.compute_ppm = kWholeGpuComputePpm;
  LedgerState ledger{{web, batch, whole}, {}};
  auto report = build_status(inv, ledger, AllocationConfig{}, 1125, state_of, {}, [](const LedgerEntry& e) {
    return e.container_id == "web" ? std::optional<std::uint32_t>(212'500) : std::nullopt;
  });
  EXPECT_EQ(report.devices[0].compute_booked, 550'000u);
  EXPECT_EQ(report.devices[0].compute_free, 450'000u);
  EXPECT_EQ(report.devices[1].compute_booked, 1'000'000u);
  EXPECT_EQ(report.devices[1].compute_free, 0u);
  expect_golden("compute", render_status(report));
  auto j = status_json(report);
  EXPECT_EQ(j["devices"][0]["compute_booked_ppm"], 550'000);
  EXPECT_EQ(j["devices"][0]["compute_free_ppm"], 450'000);
  const auto& shares = j["devices"][0]["shares"];
  EXPECT_EQ(shares[0]["compute"], 250'000);
  EXPECT_EQ(shares[0]["compute_mode"], "fair");
  EXPECT_EQ(shares[0]["priority"], "normal");
  EXPECT_EQ(shares[0]["compute_achieved_ppm"], 212'500);
  EXPECT_EQ(shares[1]["compute_mode"], "strict");
  EXPECT_EQ(shares[1]["priority"], "high");
  EXPECT_TRUE(shares[1]["compute_achieved_ppm"].is_null());
  // Without compute shares: the fields say 0 booked, all free; a share has no "compute" key.
  auto plain = status_json(two_gpus_report());
  EXPECT_EQ(plain["devices"][1]["compute_booked_ppm"], 0);
  EXPECT_EQ(plain["devices"][1]["compute_free_ppm"], 1'000'000);
  EXPECT_FALSE(plain["devices"][0]["shares"][0].contains("compute"));
  EXPECT_TRUE(plain["devices"][0]["shares"][0]["compute_achieved_ppm"].is_null());
}

// A GPU whose compute arbiter was tampered with: one line under it naming the first reason, the
// reasons in its JSON (the key only then).
TEST(StatusModel, ComputeArbiterTampered) {
  auto inv = machine("a100-40gb-x2.yaml");
  LedgerEntry web = entry("web", inv.gpus[0].uuid, 10134 * kMiB, 42, 1000);
  web.compute_ppm = 250'000;
  auto report = build_status(inv, LedgerState{{web}, {}}, AllocationConfig{}, 1125, state_of);
  report.devices[0].compute_tampered = {"the lease names slot 9, which was never set up",
                                        "container web@p42-1 waited past its bound and ran unarbitrated"};
  const std::string text = render_status(report);
  EXPECT_NE(text.find("\n     compute arbiter tampered with: the lease names slot 9, which was never set up (and 1 "
                      "more)\n"),
            std::string::npos)
      << text;
  auto j = status_json(report);
  EXPECT_EQ(j["devices"][0]["compute_arbiter_tampered"],
            nlohmann::json::array({"the lease names slot 9, which was never set up",
                                   "container web@p42-1 waited past its bound and ran unarbitrated"}));
  EXPECT_FALSE(j["devices"][1].contains("compute_arbiter_tampered"));
  report.devices[0].compute_tampered.clear();
  EXPECT_EQ(render_status(report).find("tampered"), std::string::npos);
}

// Who the lines accuse: the slot whose lane lied or whose lane file changed, never the witness that
// saw it nor a container that waited past its bound (the victim).
TEST(StatusModel, ComputeTamperingNamesTheAccusedSlotOnly) {
  DeviceStatus d;
  d.compute_tampered = {"slot 0 (web@p42-1) saw slot 1 (evil@p7-1)'s lane move back (in the last 10 minutes)",
                        "container victim@p9-1 waited past its bound and ran unarbitrated"};
  EXPECT_TRUE(d.compute_tampering_by("evil@p7-1"));
  EXPECT_FALSE(d.compute_tampering_by("web@p42-1"));
  EXPECT_FALSE(d.compute_tampering_by("victim@p9-1"));
  d.compute_tampered = {"slot 2 (ahead@p3-1)'s lane is 59999 ms of its time ahead of the queue (at most 10000)",
                        "the lane file of \"file@p4-1\"'s mode is 0666 (the host made 0600)"};
  EXPECT_TRUE(d.compute_tampering_by("ahead@p3-1"));
  EXPECT_TRUE(d.compute_tampering_by("file@p4-1"));
  EXPECT_FALSE(d.compute_tampering_by("p3-1"));
}

// A default compute share (a share's memory share of the time) is rarely a whole percent: the table
// shows tenths ("11.6 %"), as it shows whole ones ("25 %"); JSON keeps the exact ppm.
TEST(StatusModel, DefaultComputeSharesInTenthsOfAPercent) {
  auto inv = machine("a100-40gb-x2.yaml");
  LedgerEntry a = entry("a", inv.gpus[0].uuid, 4 * kGiB, 42, 1000);
  a.request = "memory=4Gi";
  a.compute_ppm = 116'415;
  LedgerEntry b = entry("b", inv.gpus[0].uuid, 10134 * kMiB, 43, 1000);
  b.compute_ppm = 250'000;
  auto report = build_status(inv, LedgerState{{a, b}, {}}, AllocationConfig{}, 1125, state_of);
  const std::string text = render_status(report);
  EXPECT_EQ(text.find("11.6415"), std::string::npos) << text;
  EXPECT_NE(text.find("  11.6 %  "), std::string::npos) << text;
  EXPECT_NE(text.find("  25 %  "), std::string::npos) << text;
  EXPECT_NE(text.find("  36.6 %  "), std::string::npos) << text;  // the GPU: 366'415 ppm
  EXPECT_EQ(status_json(report)["devices"][0]["shares"][0]["compute"], 116'415);
}

// Letters name containers across the node: a container booked on two GPUs (two CDI devices) is the
// same letter on both, and a container on the second GPU alone gets the next letter, not A again.
TEST(StatusModel, ShareLettersArePerContainerAcrossTheNode) {
  auto inv = machine("a100-40gb-x2.yaml");
  LedgerEntry x0 = entry("x", inv.gpus[0].uuid, 10134 * kMiB, 42, 1000);
  x0.device_key = "gpufrac.io/gpu=0-0.25";
  LedgerEntry x1 = entry("x", inv.gpus[1].uuid, 10134 * kMiB, 42, 1000);
  x1.device_key = "gpufrac.io/gpu=1-0.25";
  x1.gpu_index = 1;
  LedgerEntry y = entry("y", inv.gpus[1].uuid, 10134 * kMiB, 43, 1000);
  y.gpu_index = 1;
  auto report = build_status(inv, LedgerState{{x0, x1, y}, {}}, AllocationConfig{}, 1125, state_of);
  const auto lines = text::split(render_status(report), '\n');
  EXPECT_EQ(lines[2], "     [aaaaaaaaaaaaaaa.............................................]");
  EXPECT_EQ(lines[4], "     [aaaaaaaaaaaaaaabbbbbbbbbbbbbbb..............................]");
  std::vector<std::string> labels;
  for (std::size_t i = 7; i < lines.size() && !lines[i].empty(); ++i) labels.push_back(lines[i].substr(0, 2));
  EXPECT_EQ(labels, (std::vector<std::string>{"A ", "A ", "B "}));
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
