// SM shares in the ledger (version 7): the entry's compute_mode "sm", the top-level "mps" records of
// GPUs in MPS mode, both readers agreeing, older versions refusing them; the records' life through
// Ledger::reserve and release; an SM share alone in its container.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/ledger/ledger_canonical.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/ledger/ledger_mps.hpp"
#include "ledger_fixture.hpp"

namespace gpufrac {
namespace {

using testing::LedgerTest;

const std::string kGpu0 = "GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5";

LedgerEntry sm_share() {
  LedgerEntry e = testing::sample_entry();
  e.request = "compute=30 compute-mode=sm";
  e.compute_ppm = 300'000;
  e.compute_mode = ComputeMode::sm;
  return e;
}

std::string load_error(const std::string& text) {
  auto r = parse_ledger(text, "ledger.json");
  EXPECT_FALSE(r);
  return r ? "" : r.error().message;
}

TEST(LedgerSm, WritesVersion7AndBothReadersAgree) {
  const LedgerState s{{sm_share()}, {}, {}, {{kGpu0, 1700000100}}};
  const std::string text = ledger_to_json(s);
  EXPECT_EQ(ledger_version_for(s), kLedgerVersionSm);
  EXPECT_TRUE(text.starts_with("{\"version\":7,"));
  EXPECT_NE(text.find(",\"compute\":300000,\"compute_mode\":\"sm\",\"priority\":\"normal\"}"), std::string::npos);
  EXPECT_TRUE(text.ends_with("],\"mps\":[\n{\"gpu\":\"" + kGpu0 + "\",\"since\":1700000100}\n]}\n"));
  EXPECT_EQ(scan_canonical_ledger(text), s);
  EXPECT_EQ(parse_ledger_json(text, "ledger.json").value(), s);
  // A record alone (an idle GPU in MPS mode) is version 7 too; without either, the older versions.
  EXPECT_EQ(ledger_version_for(LedgerState{{}, {}, {}, {{kGpu0, 1}}}), kLedgerVersionSm);
  LedgerEntry fair = sm_share();
  fair.compute_mode = ComputeMode::fair;
  EXPECT_EQ(ledger_version_for(LedgerState{{fair}}), kLedgerVersionCompute);
}

TEST(LedgerSm, OlderVersionsAndDamagedRecordsAreRefused) {
  auto doc = nlohmann::json::parse(ledger_to_json(LedgerState{{sm_share()}}));
  doc["version"] = 5;
  doc.erase("mps");
  EXPECT_EQ(load_error(doc.dump()), "ledger.json: entries[0]: an SM share in a version 5 ledger");
  doc = nlohmann::json::parse(ledger_to_json(LedgerState{{}, {}, {}, {{kGpu0, 1}, {kGpu0, 2}}}));
  EXPECT_EQ(load_error(doc.dump()), "ledger.json: mps[1]: a second record of " + kGpu0);
  doc["mps"] = nlohmann::json::array({{{"gpu", "MIG-x"}, {"since", 1}}});
  EXPECT_EQ(load_error(doc.dump()), "ledger.json: mps[0].gpu: must start with GPU-");
  doc["mps"] = nlohmann::json::array({{{"gpu", kGpu0}}});
  EXPECT_EQ(load_error(doc.dump()), "ledger.json: mps[0]: must be {gpu, since}");
  LedgerEntry high = sm_share();
  high.priority = ComputePriority::high;
  EXPECT_EQ(load_error(ledger_to_json(LedgerState{{high}})),
            "ledger.json: entries[0].priority: must be normal on an SM share");
}

TEST(LedgerSm, RecordsFollowTheBookings) {
  LedgerState s{{sm_share()}};
  Grant g = grant_of(s.entries[0]);
  EXPECT_EQ(record_mps_gpus(s, {g}, 100), std::vector<std::string>{kGpu0});
  EXPECT_TRUE(record_mps_gpus(s, {g}, 200).empty());  // recorded once
  EXPECT_EQ(s.mps, (std::vector<MpsGpuRecord>{{kGpu0, 100}}));
  EXPECT_TRUE(expired_mps_gpus(s, 0, 1000).empty());  // an SM share holds it
  const auto gone = s.entries;
  s.entries.clear();
  record_mps_idle(s, gone, 500);
  EXPECT_EQ(s.mps, (std::vector<MpsGpuRecord>{{kGpu0, 500}}));
  EXPECT_TRUE(expired_mps_gpus(s, 600, 1099).empty());
  EXPECT_EQ(expired_mps_gpus(s, 600, 1100), std::vector<std::string>{kGpu0});
  EXPECT_TRUE(drop_mps_record(s, kGpu0));
  EXPECT_FALSE(drop_mps_record(s, kGpu0));
}

TEST_F(LedgerTest, AnSmShareRecordsItsGpuAndIsAlone) {
  auto l = ledger();
  ReserveArgs a = args("s1", "0.25");
  a.request = **parse_request({{"gpufrac.io/compute", "30"}, {"gpufrac.io/compute-mode", "sm"}}, true);
  auto b = l.reserve(a, inv_, cfg_);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->grant.compute_mode, ComputeMode::sm);
  auto s = l.read();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->mps, (std::vector<MpsGpuRecord>{{kGpu0, now_}}));
  // Another booking of the same container (a second CDI device) is refused, and the other way round.
  ReserveArgs more = args("s1", "0.25");
  more.device_key = "1-0.25";
  auto refused = l.reserve(more, inv_, cfg_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "container s1 holds an SM share of GPU 0 (compute=30 compute-mode=sm); an SM share must be its only GPU "
            "(a process is the client of one GPU's MPS server), so fraction=0.25 is refused");
  // Released: the GPU stays in MPS mode, idle from now.
  now_ += 50;
  ASSERT_TRUE(l.release("s1"));
  s = l.read();
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->entries.empty());
  EXPECT_EQ(s->mps, (std::vector<MpsGpuRecord>{{kGpu0, now_}}));
}

}  // namespace
}  // namespace gpufrac
