// Burstable memory in the ledger (version 6): an entry's limit and wait_ms, both readers agreeing,
// older versions refusing them; the allocator's limit in bytes on the GPU it grants; the limit file
// every front-end writes (burst and wait lines); the driver's limits (soft = request, hard = limit)
// and NVIDIA's variables.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/enforcement/enforcement.hpp"
#include "core/enforcement/nvidia_memory_env.hpp"
#include "core/ledger/ledger_canonical.hpp"
#include "core/ledger/ledger_json.hpp"
#include "ledger_fixture.hpp"
#include "limits/host/limit_file.hpp"
#include "nvml/simulated.hpp"
#include "state/claim_members.hpp"
#include "state/container_state.hpp"

namespace gpufrac {
namespace {

using testing::LedgerTest;

LedgerEntry bursting() {
  LedgerEntry e = testing::sample_entry();
  e.request = "memory=10Gi memory-limit=30Gi on-limit=wait on-limit-timeout=5";
  e.bytes = 10ull << 30;
  e.limit_bytes = 30ull << 30;
  e.wait_ms = 5000;
  return e;
}

constexpr const char* kLine =
    "{\"container_id\":\"c1\",\"device_key\":\"\",\"device_uuid\":\"GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5\","
    "\"gpu_index\":0,\"gpu_uuid\":\"GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5\",\"mig\":null,\"bytes\":10737418240,"
    "\"exclusive\":false,\"request\":\"memory=10Gi memory-limit=30Gi on-limit=wait on-limit-timeout=5\",\"source\":"
    "\"hook\",\"pid\":4242,\"pid_start\":987654,\"created\":1700000000,\"limit\":32212254720,\"wait_ms\":5000}";

std::string load_error(const std::string& text) {
  auto r = parse_ledger(text, "ledger.json");
  EXPECT_FALSE(r);
  return r ? "" : r.error().message;
}

std::string with(const std::function<void(nlohmann::json&)>& edit) {
  auto doc = nlohmann::json::parse(ledger_to_json(LedgerState{{bursting()}}));
  edit(doc["entries"][0]);
  return doc.dump();
}

TEST(LedgerBurst, VersionSixWithTheLimitAndTheWait) {
  const LedgerState s{{bursting()}};
  const std::string text = ledger_to_json(s);
  EXPECT_EQ(text, std::string("{\"version\":6,\"entries\":[\n") + kLine +
                      "\n],\"mig_idle\":[\n],\"limits_to_clear\":[\n]}\n");
  EXPECT_EQ(ledger_version_for(s), kLedgerVersionBurst);
  auto fast = scan_canonical_ledger(text);
  ASSERT_TRUE(fast);
  EXPECT_EQ(*fast, s);
  auto strict = parse_ledger_json(text, "ledger.json");
  ASSERT_TRUE(strict) << strict.error().message;
  EXPECT_EQ(*strict, s);
  LedgerEntry only_wait = testing::sample_entry();
  only_wait.wait_ms = 30000;
  EXPECT_EQ(ledger_version_for(LedgerState{{only_wait}}), 6);
  EXPECT_EQ(ledger_version_for(LedgerState{{testing::sample_entry()}}), 1) << "no burst: the version it was";
}

TEST(LedgerBurst, OlderVersionsAndBadValuesAreRefused) {
  std::string v5 = ledger_to_json(LedgerState{{bursting()}});
  v5.replace(v5.find("\"version\":6"), 11, "\"version\":5");
  EXPECT_EQ(load_error(v5), "ledger.json: entries[0]: a burst limit or wait in a version 5 ledger");
  EXPECT_EQ(load_error(with([](nlohmann::json& e) { e["limit"] = 1024; })),
            "ledger.json: entries[0].limit: must be above bytes");
  EXPECT_EQ(load_error(with([](nlohmann::json& e) { e["limit"] = 0; })),
            "ledger.json: entries[0].limit: must be above bytes");
  EXPECT_EQ(load_error(with([](nlohmann::json& e) { e["wait_ms"] = 3600001; })),
            "ledger.json: entries[0].wait_ms: must be an integer 0-3600000");
  EXPECT_EQ(load_error(with([](nlohmann::json& e) { e["exclusive"] = true; })),
            "ledger.json: entries[0].limit: is set only on a share of a GPU");
  std::string v8 = ledger_to_json(LedgerState{{bursting()}});
  v8.replace(v8.find("\"version\":6"), 11, "\"version\":8");
  EXPECT_EQ(load_error(v8),
            "ledger.json: ledger version \"8\" is not 1 to 7; it was written by another gpufrac version");
}

TEST(LedgerBurst, TheGrantOfAnEntryCarriesItsLimit) {
  const Grant g = grant_of(bursting());
  EXPECT_EQ(g.bytes, 10ull << 30);
  EXPECT_EQ(g.limit_bytes, 30ull << 30);
  EXPECT_EQ(g.limit(), 30ull << 30);
  EXPECT_EQ(g.wait_ms, 5000u);
}

TEST_F(LedgerTest, ReserveBooksTheRequestAndKeepsTheLimit) {
  ReserveArgs a = args("a", "0.25");
  a.request = **parse_request(
      {{"gpufrac.io/memory", "10Gi"}, {"gpufrac.io/memory-limit", "30Gi"}, {"gpufrac.io/on-limit", "wait"}}, true);
  auto booked = ledger().reserve(a, inv_, cfg_);
  ASSERT_TRUE(booked) << booked.error().message;
  EXPECT_EQ(booked->grant.bytes, 10ull << 30);
  EXPECT_EQ(booked->grant.limit_bytes, 30ull << 30);
  ReserveArgs b = args("b", "0.25");
  b.request = **parse_request({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/fraction-limit", "1"}}, true);
  ASSERT_TRUE(ledger().reserve(b, inv_, cfg_));
  auto e = entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].limit_bytes, 30ull << 30);
  EXPECT_EQ(e[0].wait_ms, 30000u);
  // A fraction limit is that fraction of the granted GPU's memory (40536 MiB): all of it here.
  EXPECT_EQ(e[1].bytes, 10134ull << 20);
  EXPECT_EQ(e[1].limit_bytes, 40536ull << 20);
  // The requests count, not the limits: 10Gi + 9.9 GiB booked of GPU 0's 39.6 GiB leaves 19.7 GiB.
  ReserveArgs c = args("c", "0.25");
  c.request = **parse_request({{"gpufrac.io/memory", "19Gi"}, {"gpufrac.io/gpu", "0"}}, true);
  EXPECT_TRUE(ledger().reserve(c, inv_, cfg_));
  // A limit past the GPU's memory is the GPU's memory.
  ReserveArgs d = args("d", "0.25");
  d.request = **parse_request(
      {{"gpufrac.io/memory", "1Gi"}, {"gpufrac.io/memory-limit", "100Gi"}, {"gpufrac.io/gpu", "1"}}, true);
  auto big = ledger().reserve(d, inv_, cfg_);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->grant.limit_bytes, 40536ull << 20);
}

TEST_F(LedgerTest, LimitFilesCarryTheBurstAndWaitLines) {
  Config cfg = default_config();
  cfg.state_dir = dir_ + "/state";
  LedgerEntry plain = testing::sample_entry();
  plain.device_key = "x";
  plain.device_uuid = "GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c";
  plain.gpu_uuid = plain.device_uuid;
  auto files = write_container_files(cfg, "c1", {bursting(), plain}, "");
  ASSERT_TRUE(files) << files.error().message;
  auto limits = limits::read_limit_file(files->limits);
  ASSERT_TRUE(limits) << limits.error().message;
  ASSERT_EQ(limits->devices.size(), 2u);
  EXPECT_EQ(limits->devices[0].bytes, 30ull << 30) << "the shim's limit is the burst limit";
  EXPECT_EQ(limits->devices[0].request, 10ull << 30);
  EXPECT_EQ(limits->devices[0].wait_ms, 5000u);
  EXPECT_EQ(limits->devices[1].request, 0u) << "no burst line where the limit is the booking";
  const std::string text = limits::render_limit_file(*limits);
  EXPECT_NE(text.find("device GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 32212254720\n"
                      "burst GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 10737418240\n"
                      "wait GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 5000\n"),
            std::string::npos)
      << text;
}

TEST(LimitFileBurst, TheShimsGrammar) {
  const std::string head =
      "version 1\nregion /run/gpufrac/usage\ndevice GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 100\n";
  auto err = [&](const std::string& tail) {
    auto r = limits::parse_limit_file(head + tail);
    return r ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(err("burst GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 40\nwait GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 5\n"),
            "ok");
  EXPECT_EQ(
      err("burst GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 100\n"),
      "limit file: line 4: burst: bad request; accepted: a decimal byte count above 0 and below the device's limit");
  EXPECT_EQ(err("burst GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c 40\n"),
            "limit file: line 4: burst: no device line for this UUID before it; accepted: device <uuid> <bytes> first");
  EXPECT_EQ(
      err("burst GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 40\nburst GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 40\n"),
      "limit file: line 5: burst: UUID listed twice");
  EXPECT_EQ(err("wait GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 3600001\n"),
            "limit file: line 4: wait: bad timeout; accepted: 1 to 3600000 ms");
}

TEST(DriverLimitBurst, SoftIsTheRequestAndHardTheLimit) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/h100-80gb-x3-r615.yaml");
  ASSERT_TRUE(m);
  Config cfg = default_config();
  cfg.nvml.backend = NvmlBackend::nvml;
  LedgerEntry e = bursting();
  e.gpu_uuid = e.device_uuid = m->inventory.gpus[0].uuid;
  auto plan = plan_driver_limits({e}, m->inventory, CgroupLayout::v2, cfg, "/sys/fs/cgroup/c1");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].limit, (DriverLimit{"/sys/fs/cgroup/c1", 10ull << 30, 30ull << 30}));
  // NVIDIA's hook gets the same values: request 10240 MiB, limit 30720 MiB.
  auto env = nvidia_memory_env({"NVIDIA_GPU_MEMORY_REQUEST=1", "NVIDIA_GPU_MEMORY_LIMIT=1"}, {e}, cfg);
  ASSERT_TRUE(env);
  EXPECT_EQ(*env, (std::vector<std::string>{"NVIDIA_GPU_MEMORY_LIMIT=30720", "NVIDIA_GPU_MEMORY_REQUEST=10240"}));
  EXPECT_TRUE(check_nvidia_memory_env({"NVIDIA_GPU_MEMORY_REQUEST=10240", "NVIDIA_GPU_MEMORY_LIMIT=30720"}, {e}, cfg));
}

}  // namespace
}  // namespace gpufrac

namespace gpufrac {
namespace {

// A claim's containers as the reclaimer tells their processes apart (state/claim_members.hpp): one
// line per container, each once, compared on one line.
TEST_F(LedgerTest, ClaimMembersAreTheContainersCgroups) {
  Config cfg = default_config();
  cfg.state_dir = dir_ + "/state";
  cfg.proc_root = proc_;
  ASSERT_TRUE(fs::write_file_atomic(proc_ + "/100/cgroup", "1:cpu:/kubepods/pod1/c1\n0::/kubepods/pod1/c1\n"));
  ASSERT_TRUE(fs::write_file_atomic(proc_ + "/200/cgroup", "0::/kubepods/pod1/c2\n"));
  const std::string key = "2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41@dra";
  EXPECT_EQ(claim_members(cfg, key), std::vector<std::string>{});
  ASSERT_TRUE(fs::make_dirs(cfg.container_dir(key)));
  ASSERT_TRUE(add_claim_member(cfg, key, 100));
  ASSERT_TRUE(add_claim_member(cfg, key, 200));
  ASSERT_TRUE(add_claim_member(cfg, key, 100));
  EXPECT_EQ(claim_members(cfg, key),
            (std::vector<std::string>{"1:cpu:/kubepods/pod1/c1;0::/kubepods/pod1/c1", "0::/kubepods/pod1/c2"}));
  auto missing = add_claim_member(cfg, key, 300);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/300/cgroup"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace gpufrac
