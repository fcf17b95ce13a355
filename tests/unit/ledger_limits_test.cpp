// The ledger's version 5: driver limits in entries and limits_to_clear, written and read by both
// readers alike (beside version 4's compute shares), and never forgotten: every way a booking leaves
// the ledger keeps its limit for clearing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_canonical.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/ledger/ledger_limits.hpp"
#include "ledger_fixture.hpp"

namespace gpufrac {
namespace {

const std::string kGpu = "GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5";  // a100-40gb-x2, GPU 0
const DriverLimit kLimit{"/sys/fs/cgroup/system.slice/c1.scope", 10ull << 30, 10ull << 30};

LedgerEntry limited_entry() {
  LedgerEntry e;
  e.container_id = "c1";
  e.device_uuid = e.gpu_uuid = kGpu;
  e.bytes = 10ull << 30;
  e.request = "fraction=0.25";
  e.pid = 100;
  e.pid_start = 5000;
  e.created = 1700000000;
  e.instance = "p100-5000";
  e.driver_limit = kLimit;
  return e;
}

std::string load_error(const std::string& text) {
  auto r = parse_ledger(text, "ledger.json");
  EXPECT_FALSE(r);
  return r ? "" : r.error().message;
}

TEST(LedgerJsonV5, DriverLimitsRoundTripAsVersionFiveThroughBothReaders) {
  LedgerState s;
  s.entries = {limited_entry()};
  s.limits_to_clear = {LimitToClear{kGpu, DriverLimit{"/sys/fs/cgroup/old", 1, 2}, "c0@p1-2", 1700000001}};
  const std::string text = ledger_to_json(s);
  EXPECT_NE(
      text.find("\"instance\":\"p100-5000\",\"driver_limit\":{\"cgroup\":\"/sys/fs/cgroup/system.slice/c1.scope\","
                "\"soft\":10737418240,\"hard\":10737418240}}"),
      std::string::npos)
      << text;
  EXPECT_TRUE(text.starts_with("{\"version\":5,"));
  EXPECT_TRUE(text.ends_with("],\"mig_idle\":[\n],\"limits_to_clear\":[\n{\"gpu\":\"" + kGpu +
                             "\",\"cgroup\":\"/sys/fs/cgroup/old\",\"soft\":1,\"hard\":2,\"owner\":\"c0@p1-2\","
                             "\"since\":1700000001}\n]}\n"))
      << text;
  auto fast = scan_canonical_ledger(text);
  ASSERT_TRUE(fast);
  EXPECT_EQ(*fast, s);
  auto strict = parse_ledger_json(text, "ledger.json");
  ASSERT_TRUE(strict) << strict.error().message;
  EXPECT_EQ(*strict, s);
  s.entries[0].driver_limit.reset();
  s.limits_to_clear.clear();
  EXPECT_TRUE(ledger_to_json(s).starts_with("{\"version\":1,")) << "no limit: the version older binaries read";
}

TEST(LedgerJsonV5, AComputeShareWithADriverLimitIsVersionFiveWithBothInTheWritersOrder) {
  LedgerState s;
  s.entries = {limited_entry()};
  s.entries[0].compute_ppm = 250'000;
  s.entries[0].compute_mode = ComputeMode::strict;
  const std::string text = ledger_to_json(s);
  EXPECT_EQ(ledger_version_for(s), kLedgerVersionDriverLimits);
  EXPECT_NE(text.find("\"instance\":\"p100-5000\",\"compute\":250000,\"compute_mode\":\"strict\",\"priority\":"
                      "\"normal\",\"driver_limit\":{"),
            std::string::npos)
      << text;
  EXPECT_EQ(scan_canonical_ledger(text), s);
  EXPECT_EQ(parse_ledger_json(text, "ledger.json").value(), s);
  // Without the limit, the share alone is version 4 (what a gpufrac of compute shares reads).
  s.entries[0].driver_limit.reset();
  EXPECT_EQ(ledger_version_for(s), kLedgerVersionCompute);
  EXPECT_TRUE(ledger_to_json(s).starts_with("{\"version\":4,"));
}

TEST(LedgerJsonV5, AnOlderVersionWithALimitAndDamagedLimitsAreRefused) {
  LedgerState s;
  s.entries = {limited_entry()};
  nlohmann::json doc = nlohmann::json::parse(ledger_to_json(s));
  doc["version"] = 3;
  doc.erase("limits_to_clear");
  EXPECT_EQ(load_error(doc.dump()), "ledger.json: entries[0]: a driver limit in a version 3 ledger");
  doc["version"] = 4;  // compute shares' version: still no driver limit
  EXPECT_EQ(scan_canonical_ledger(doc.dump()), std::nullopt);
  EXPECT_EQ(load_error(doc.dump()), "ledger.json: entries[0]: a driver limit in a version 4 ledger");
  EXPECT_EQ(load_error(R"({"version": 4, "entries": [], "mig_idle": [], "limits_to_clear": []})"),
            "ledger.json: ledger version 4 has exactly version, entries and mig_idle");
  EXPECT_EQ(load_error(R"({"version": 5, "entries": [], "mig_idle": []})"),
            "ledger.json: ledger version 5 has exactly version, entries, mig_idle and limits_to_clear");
  doc = nlohmann::json::parse(ledger_to_json(s));
  doc["entries"][0]["driver_limit"]["soft"] = doc["entries"][0]["driver_limit"]["hard"].get<std::uint64_t>() + 1;
  EXPECT_EQ(load_error(doc.dump()), "ledger.json: entries[0].driver_limit.soft: is above hard");
  doc["entries"][0]["driver_limit"] = {{"cgroup", "/sys/fs/cgroup/../etc"}, {"soft", 0}, {"hard", 1}};
  EXPECT_EQ(load_error(doc.dump()),
            "ledger.json: entries[0].driver_limit.cgroup: is not an absolute path without . or ..");
  doc["entries"][0]["driver_limit"] = {{"cgroup", ""}, {"soft", 0}, {"hard", 1}};  // found by fuzz_ledger
  EXPECT_EQ(load_error(doc.dump()),
            "ledger.json: entries[0].driver_limit.cgroup: is not an absolute path without . or ..");
  EXPECT_TRUE(validate_cgroup_path("/"));
  EXPECT_FALSE(validate_cgroup_path("/a//b"));
  EXPECT_FALSE(validate_cgroup_path("/a/"));
  doc["entries"][0]["driver_limit"] = {{"cgroup", "/a"}, {"soft", 0}};
  EXPECT_EQ(load_error(doc.dump()), "ledger.json: entries[0].driver_limit: must be {cgroup, soft, hard}");
  const std::string rec = R"({"gpu": "GPU-1", "cgroup": "/a", "soft": 0, "hard": 1, "owner": "c", "since": 1})";
  EXPECT_EQ(
      load_error(R"({"version": 5, "entries": [], "mig_idle": [], "limits_to_clear": [)" + rec + "," + rec + "]}"),
      "ledger.json: limits_to_clear: a second record of one GPU and cgroup");
  EXPECT_EQ(load_error(R"({"version": 5, "entries": [], "mig_idle": [], "limits_to_clear": [{"gpu": "MIG-1"}]})"),
            "ledger.json: limits_to_clear[0]: must be {gpu, cgroup, soft, hard, owner, since}");
}

TEST(LedgerLimits, ALimitLeavingTheLedgerWaitsToBeClearedUnlessAnotherBookingHoldsIt) {
  LedgerState s;
  LedgerEntry a = limited_entry(), b = limited_entry();
  b.container_id = "c2";
  s.entries = {b};  // c2 holds a limit on the same GPU and cgroup (a new container, same cgroup path)
  record_limits_to_clear(s, {a}, 1700000005);
  EXPECT_TRUE(s.limits_to_clear.empty());
  s.entries.clear();
  record_limits_to_clear(s, {a}, 1700000005);
  record_limits_to_clear(s, {b}, 1700000006);  // one record per GPU and cgroup: the latest
  ASSERT_EQ(s.limits_to_clear.size(), 1u);
  EXPECT_EQ(s.limits_to_clear[0], (LimitToClear{kGpu, kLimit, "c2@p100-5000", 1700000006}));
  EXPECT_TRUE(drop_limit_to_clear(s, kGpu, kLimit.cgroup));
  EXPECT_FALSE(drop_limit_to_clear(s, kGpu, kLimit.cgroup));
}

class LedgerLimitsTest : public testing::LedgerTest {
 protected:
  // Books c1 for pid 100 and records a driver limit in its entry, as `driver-limit set` does.
  void book_limited(const std::string& id, std::int64_t pid) {
    auto a = args(id, "0.25", pid);
    a.instance = "i1";
    ASSERT_TRUE(ledger().reserve(a, inv_, cfg_));
    auto r = ledger().update([&](LedgerState& s) -> Result<bool> {
      for (auto& e : s.entries)
        if (e.container_id == id) e.driver_limit = DriverLimit{"/sys/fs/cgroup/" + id, 1ull << 30, 2ull << 30};
      return true;
    });
    ASSERT_TRUE(r) << r.error().message;
  }
  std::vector<LimitToClear> to_clear() {
    auto s = ledger().read();
    return s ? s->limits_to_clear : std::vector<LimitToClear>{};
  }
};

TEST_F(LedgerLimitsTest, EveryReleaseAndReclaimKeepsTheLimitForClearing) {
  book_limited("c1", 100);
  ASSERT_TRUE(ledger().release("c1", "i1"));  // rollback, gpufrac-runtime's undo
  ASSERT_EQ(to_clear().size(), 1u);
  EXPECT_EQ(to_clear()[0].owner, "c1@i1");
  EXPECT_EQ(to_clear()[0].limit.cgroup, "/sys/fs/cgroup/c1");
  book_limited("c2", 200);
  ASSERT_TRUE(ledger().release_stopped("c2", "i1", 0));  // poststop
  EXPECT_EQ(to_clear().size(), 2u);
  book_limited("c3", 100);
  std::filesystem::remove_all(proc_ + "/100");  // the container died without poststop
  auto gc = ledger().gc();
  ASSERT_TRUE(gc) << gc.error().message;
  ASSERT_EQ(gc->reclaimed.size(), 1u);
  ASSERT_EQ(to_clear().size(), 3u);
  EXPECT_EQ(to_clear()[2].owner, "c3@i1");
  auto text = fs::read_file(dir_ + "/state/ledger.json");
  ASSERT_TRUE(text);
  EXPECT_TRUE(text->starts_with("{\"version\":5,")) << "records keep the ledger at version 5";
}

}  // namespace
}  // namespace gpufrac
