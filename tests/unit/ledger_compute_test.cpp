// Compute shares in the ledger (version 4): the entry's compute, compute_mode and priority (all
// three or none), both readers agreeing, older versions refusing them, the grant they stand for,
// the bookings through Ledger::reserve, and the limit file every front-end writes from them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/ledger/ledger_canonical.hpp"
#include "core/ledger/ledger_json.hpp"
#include "ledger_fixture.hpp"
#include "limits/host/limit_file.hpp"
#include "state/container_state.hpp"

namespace gpufrac {
namespace {

using testing::LedgerTest;

LedgerEntry share(std::uint32_t compute, ComputeMode mode = ComputeMode::fair,
                  ComputePriority priority = ComputePriority::normal) {
  LedgerEntry e = testing::sample_entry();
  e.request = "fraction=0.25 compute=30 compute-mode=strict priority=high";
  e.compute_ppm = compute;
  e.compute_mode = mode;
  e.priority = priority;
  return e;
}

constexpr const char* kLine =
    "{\"container_id\":\"c1\",\"device_key\":\"\",\"device_uuid\":\"GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5\","
    "\"gpu_index\":0,\"gpu_uuid\":\"GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5\",\"mig\":null,\"bytes\":10626269184,"
    "\"exclusive\":false,\"request\":\"fraction=0.25 compute=30 compute-mode=strict priority=high\",\"source\":"
    "\"hook\",\"pid\":4242,\"pid_start\":987654,\"created\":1700000000,\"compute\":300000,\"compute_mode\":\"strict\","
    "\"priority\":\"high\"}";

std::string load_error(const std::string& text) {
  auto r = parse_ledger(text, "ledger.json");
  EXPECT_FALSE(r);
  return r ? "" : r.error().message;
}

// A version-4 file with one entry edited by `edit` (strict reader's form).
std::string with_entry(const std::function<void(nlohmann::json&)>& edit) {
  auto doc = nlohmann::json::parse(ledger_to_json(LedgerState{{share(300'000)}}));
  edit(doc["entries"][0]);
  return doc.dump();
}

TEST(LedgerCompute, WritesVersion4WithTheThreeFields) {
  const LedgerState s{{share(300'000, ComputeMode::strict, ComputePriority::high)}};
  const std::string text = ledger_to_json(s);
  EXPECT_EQ(text, std::string("{\"version\":4,\"entries\":[\n") + kLine + "\n],\"mig_idle\":[\n]}\n");
  EXPECT_EQ(ledger_version_for(s), kLedgerVersionCompute);
  // Both readers read it back to the same value.
  EXPECT_EQ(scan_canonical_ledger(text), s);
  EXPECT_EQ(parse_ledger_json(text, "ledger.json").value(), s);
  // The entry JSON of status and gc carries them too; without a share, none of the three.
  auto j = entry_to_json(s.entries[0]);
  EXPECT_EQ(j["compute"], 300'000);
  EXPECT_EQ(j["compute_mode"], "strict");
  EXPECT_EQ(j["priority"], "high");
  auto plain = entry_to_json(share(0));
  EXPECT_FALSE(plain.contains("compute") || plain.contains("compute_mode") || plain.contains("priority"));
  EXPECT_EQ(ledger_to_json(LedgerState{{share(0)}}).substr(0, 12), "{\"version\":1");
}

TEST(LedgerCompute, OlderVersionsRefuseOrAreRefused) {
  // This binary refuses a compute share in a file that claims an older version...
  std::string v3 = ledger_to_json(LedgerState{{share(300'000)}});
  v3.replace(v3.find("\"version\":4"), 11, "\"version\":3");
  EXPECT_EQ(scan_canonical_ledger(v3), std::nullopt);
  EXPECT_EQ(load_error(v3), "ledger.json: entries[0]: a compute share in a version 3 ledger");
  // ...and a binary that knows versions 1 to 3 refuses version 4 with the "another gpufrac" line:
  // the same check this binary applies to version 6.
  EXPECT_EQ(load_error(R"({"version": 8, "entries": [], "mig_idle": []})"),
            "ledger.json: ledger version \"8\" is not 1 to 7; it was written by another gpufrac version");
}

TEST(LedgerCompute, StrictReaderChecksTheFields) {
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["compute"] = 0; })),
            "ledger.json: entries[0].compute: must be an integer 1-1000000");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["compute"] = 1'000'001; })),
            "ledger.json: entries[0].compute: must be an integer 0-1000000");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["compute_mode"] = "lax"; })),
            "ledger.json: entries[0].compute_mode: must be fair, strict or sm");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["priority"] = "low"; })),
            "ledger.json: entries[0].priority: must be normal or high");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e.erase("priority"); })), "ledger.json: entries[0].priority: missing");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e.erase("compute"); })), "ledger.json: entries[0].compute: missing");
  EXPECT_EQ(load_error(with_entry([](auto& e) {
              e["device_uuid"] = "MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e";
              e["mig"] = {{"gi", 9}, {"ci", 0}, {"profile", "1g.10gb"}};
            })),
            "ledger.json: entries[0].compute: is never booked on a MIG instance");
  // Keys in another order and spaces: the strict reader's, same value.
  auto reordered = parse_ledger(with_entry([](auto& e) { e["priority"] = "normal"; }), "ledger.json");
  ASSERT_TRUE(reordered) << reordered.error().message;
  EXPECT_EQ(reordered->entries[0].priority, ComputePriority::normal);
  EXPECT_EQ(reordered->entries[0].compute_ppm, 300'000u);
}

TEST(LedgerCompute, TheGrantOfAnEntryCarriesItsShare) {
  const Grant g = grant_of(share(300'000, ComputeMode::strict, ComputePriority::high));
  EXPECT_EQ(g.compute_ppm, 300'000u);
  EXPECT_EQ(g.compute_mode, ComputeMode::strict);
  EXPECT_EQ(g.priority, ComputePriority::high);
}

TEST_F(LedgerTest, ReserveBooksTimeBesideMemory) {
  auto a = ledger().reserve(args("a", "0.25"), inv_, cfg_);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->grant.compute_ppm, 250'000u);
  ReserveArgs b = args("b", "0.1");
  b.request = **parse_request({{"gpufrac.io/compute", "70"}, {"gpufrac.io/compute-mode", "strict"}}, true);
  ASSERT_TRUE(ledger().reserve(b, inv_, cfg_));
  auto e = entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].request, "compute=70 compute-mode=strict");
  EXPECT_EQ(e[1].compute_ppm, 700'000u);
  EXPECT_EQ(e[1].compute_mode, ComputeMode::strict);
  EXPECT_EQ(e[1].gpu_index, 0u);  // binpack: GPU 0, where a's quarter is
  // GPU 0 is now full of time; compute=10 goes to GPU 1, and a retry gets the same grant.
  ReserveArgs c = args("c", "0.1");
  c.request = **parse_request({{"gpufrac.io/memory", "1Gi"}, {"gpufrac.io/compute", "10"}}, true);
  auto booked = ledger().reserve(c, inv_, cfg_);
  ASSERT_TRUE(booked);
  EXPECT_EQ(booked->grant.gpu_index, 1u);
  auto again = ledger().reserve(c, inv_, cfg_);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->existing);
  EXPECT_EQ(again->grant.compute_ppm, 100'000u);
  // Pinned to GPU 0, which has 5 % left: 6 % is refused and nothing is booked; 5 % fills it.
  ReserveArgs d = args("d", "0.1");
  d.request =
      **parse_request({{"gpufrac.io/memory", "1Gi"}, {"gpufrac.io/compute", "6"}, {"gpufrac.io/gpu", "0"}}, true);
  auto refused = ledger().reserve(d, inv_, cfg_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "no GPU has 6 % of its time free for compute=6: GPU 0 5 % (pinned by gpufrac.io/gpu)");
  EXPECT_EQ(entries().size(), 3u);
  d.request =
      **parse_request({{"gpufrac.io/memory", "1Gi"}, {"gpufrac.io/compute", "5"}, {"gpufrac.io/gpu", "0"}}, true);
  ASSERT_TRUE(ledger().reserve(d, inv_, cfg_));
  EXPECT_EQ(entries().size(), 4u);
  auto state = ledger().read();
  ASSERT_TRUE(state);
  EXPECT_EQ(ledger_version_for(*state), kLedgerVersionCompute);
}

// Every front-end writes the limit file from the container's bookings: a compute line after each
// device line that holds a share; two bookings of one GPU add up.
TEST_F(LedgerTest, LimitFilesCarryTheComputeLine) {
  Config cfg = default_config();
  cfg.state_dir = dir_ + "/state";
  LedgerEntry one = share(300'000, ComputeMode::strict, ComputePriority::high);
  LedgerEntry two = share(250'000);
  two.device_key = "gpufrac.io/gpu=0-0.25";
  LedgerEntry other = share(0);
  other.device_key = "x";
  other.device_uuid = "GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c";
  other.gpu_uuid = other.device_uuid;
  auto files = write_container_files(cfg, "c1", {one, two, other}, "");
  ASSERT_TRUE(files) << files.error().message;
  auto limits = limits::read_limit_file(files->limits);
  ASSERT_TRUE(limits) << limits.error().message;
  ASSERT_EQ(limits->devices.size(), 2u);
  // The share's slot in its GPU's compute arbiter, set up where the file is written (state/compute_slots.hpp).
  EXPECT_NE(limits->devices[0].compute_token, 0u);
  EXPECT_EQ(limits->devices[0], (limits::DeviceLimit{one.device_uuid, 2 * 10626269184ull, 550'000, ComputeMode::strict,
                                                     ComputePriority::high, limits->devices[0].compute_token}));
  EXPECT_EQ(limits->devices[1], (limits::DeviceLimit{other.device_uuid, 10626269184ull}));
  EXPECT_NE(limits::render_limit_file(*limits).find("compute GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 550000 strict "
                                                    "high\n"),
            std::string::npos);
}

}  // namespace
}  // namespace gpufrac
