// The ledger's version 2: idle records of dynamic MIG instances in the file (migration from
// version 1 included), and the ledger operations that make and drop them.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/ledger/ledger_mig.hpp"
#include "fake_proc.hpp"
#include "mig_sim.hpp"
#include "small_tmpfs.hpp"

namespace gpufrac {
namespace {

const std::string kGpu = "GPU-17dcd676-8cf2-b786-263d-46a0f84a6d8d";
const std::string kMig = "MIG-8b24fc5c-ae18-6165-e4c7-7ed76985e0b5";

std::string load_error(const std::string& text) {
  auto r = parse_ledger(text, "ledger.json");
  EXPECT_FALSE(r);
  return r ? "" : r.error().message;
}

TEST(LedgerJsonV2, IdleRecordsRoundTripAsVersionTwo) {
  LedgerState s;
  s.mig_idle = {MigIdleRecord{kMig, kGpu, 1700000000}};
  const std::string text = ledger_to_json(s);
  EXPECT_EQ(text, "{\"version\":2,\"entries\":[\n],\"mig_idle\":[\n{\"uuid\":\"" + kMig + "\",\"gpu\":\"" + kGpu +
                      "\",\"since\":1700000000}\n]}\n");
  auto back = parse_ledger(text, "ledger.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, s);
}

TEST(LedgerJsonV2, VersionOneLoadsAndIsWrittenWhileThereIsNoRecord) {
  auto v1 = parse_ledger(R"({"version": 1, "entries": []})", "ledger.json");
  ASSERT_TRUE(v1);
  EXPECT_TRUE(v1->mig_idle.empty());
  EXPECT_EQ(ledger_to_json(*v1), "{\"version\":1,\"entries\":[\n]}\n");
  auto v2 = parse_ledger(R"({"version": 2, "entries": [], "mig_idle": []})", "ledger.json");
  ASSERT_TRUE(v2);
  EXPECT_EQ(ledger_to_json(*v2), "{\"version\":1,\"entries\":[\n]}\n");
}

TEST(LedgerJsonV2, DamagedRecordsAreRefused) {
  EXPECT_EQ(load_error(R"({"version": 2, "entries": []})"),
            "ledger.json: ledger version 2 has exactly version, entries and mig_idle");
  EXPECT_EQ(load_error(R"({"version": 1, "entries": [], "mig_idle": []})"),
            "ledger.json: unknown top-level key; expected version and entries");
  EXPECT_EQ(load_error(R"({"version": 8, "entries": []})"),
            "ledger.json: ledger version \"8\" is not 1 to 7; it was written by another gpufrac version");
  EXPECT_EQ(load_error(R"({"version": 2, "entries": [], "mig_idle": {}})"),
            "ledger.json: mig_idle must be an array of at most 65536");
  EXPECT_EQ(load_error(R"({"version": 2, "entries": [], "mig_idle": [{"uuid": "GPU-1", "gpu": "GPU-2", "since": 1}]})"),
            "ledger.json: mig_idle[0].uuid: must start with MIG-");
  EXPECT_EQ(load_error(R"({"version": 2, "entries": [], "mig_idle": [{"uuid": "MIG-1", "gpu": "GPU-2"}]})"),
            "ledger.json: mig_idle[0]: must be {uuid, gpu, since}");
  EXPECT_EQ(
      load_error(R"({"version": 2, "entries": [], "mig_idle": [{"uuid": "MIG-1", "gpu": "GPU-2", "since": -1}]})"),
      "ledger.json: mig_idle[0].since: must be an integer 0-9223372036854775807");
  EXPECT_EQ(load_error(R"({"version": 2, "entries": [], "mig_idle": [{"uuid": "MIG-1", "gpu": "GPU-2", "since": 1},
                                                                      {"uuid": "MIG-1", "gpu": "GPU-2", "since": 2}]})"),
            "ledger.json: mig_idle[1]: a second record of MIG-1");
}

class LedgerMigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir("ledger-mig");
    testing::write_stat(dir_ + "/proc", 100, 'S', 5000);
    sim_.add("1g.10gb", 6);
    sim_.add("1g.10gb", 5);
    inv_.gpus.push_back(sim_.gpu);
    mig_.mode = MigMode::dynamic;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Ledger ledger() {
    LedgerOptions o;
    o.path = dir_ + "/ledger.json";
    o.lock_path = dir_ + "/ledger.lock";
    o.proc_root = dir_ + "/proc";
    o.clock = [this] { return now_; };
    o.mig = mig_;
    return Ledger(o);
  }

  ReserveArgs args(const std::string& id, std::int64_t pid = 100) {
    return ReserveArgs{id, "", test::profile_request("1g.10gb"), BookingSource::hook, pid, std::nullopt};
  }

  LedgerState state() { return *ledger().read(); }

  std::string dir_;
  test::SimGpu sim_{test::sim_gpu("h100-80gb-mig-empty.yaml")};
  Inventory inv_;
  MigConfig mig_;
  std::int64_t now_ = 1'700'000'000;
};

TEST_F(LedgerMigTest, ReleaseRecordsTheInstanceIdleAndBookingDropsTheRecord) {
  auto s = state();
  ASSERT_TRUE(sync_idle_records(s, inv_.gpus[0], now_));  // found idle: adopted
  EXPECT_EQ(s.mig_idle.size(), 2u);
  s.mig_idle.clear();
  const std::string first = inv_.gpus[0].mig_instances[0].uuid;
  ASSERT_TRUE(ledger().reserve_granted(args("a"), Grant{first, 0, kGpu, MigRef{1, 0, "1g.10gb"}, 1, true, "test"}));
  now_ += 30;
  ASSERT_TRUE(ledger().release("a"));
  EXPECT_EQ(state().mig_idle, (std::vector<MigIdleRecord>{{first, kGpu, now_}}));
  auto again = ledger().reserve(args("b"), inv_, AllocationConfig{});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->grant.device_uuid, first);  // the recorded one, not the unrecorded gi 2
  EXPECT_EQ(again->grant.reason, "dynamic MIG: idle 1g.10gb on GPU 0 gi 1 reused");
  EXPECT_TRUE(state().mig_idle.empty());
}

TEST_F(LedgerMigTest, ReclaimedBookingsLeaveTheirInstanceIdle) {
  const std::string first = inv_.gpus[0].mig_instances[0].uuid;
  ASSERT_TRUE(ledger().reserve_granted(args("a"), Grant{first, 0, kGpu, MigRef{1, 0, "1g.10gb"}, 1, true, "t"}));
  std::filesystem::remove_all(dir_ + "/proc/100");
  now_ += 5;
  auto gc = ledger().gc();
  ASSERT_TRUE(gc);
  EXPECT_EQ(gc->reclaimed.size(), 1u);
  EXPECT_EQ(state().mig_idle, (std::vector<MigIdleRecord>{{first, kGpu, now_}}));
}

// Poststop on a full state directory (a small tmpfs): the release, idle record included, is written
// into the room ledger.reserve kept for it (core/ledger/ledger_file.hpp).
TEST_F(LedgerMigTest, ReleaseOnAFullStateDirectoryStillRecordsTheInstanceIdle) {
  testing::SmallTmpfs tmpfs;
  const std::string state_dir = tmpfs.mount(64 << 10);
  if (state_dir.empty()) GTEST_SKIP() << tmpfs.skip_reason();
  LedgerOptions o = ledger().options();
  o.path = state_dir + "/ledger.json";
  o.lock_path = state_dir + "/ledger.lock";
  Ledger full(o);
  const std::string first = inv_.gpus[0].mig_instances[0].uuid;
  ASSERT_TRUE(full.reserve_granted(args("a"), Grant{first, 0, kGpu, MigRef{1, 0, "1g.10gb"}, 1, true, "t"}));
  tmpfs.fill(0);
  now_ += 30;
  auto released = full.release_stopped("a", "", 100);
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->size(), 1u);
  auto after = full.read();
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->entries.empty());
  EXPECT_EQ(after->mig_idle, (std::vector<MigIdleRecord>{{first, kGpu, now_}}));
}

TEST_F(LedgerMigTest, StaticGpusGetNoRecords) {
  mig_.mode = MigMode::static_;
  const std::string first = inv_.gpus[0].mig_instances[0].uuid;
  ASSERT_TRUE(ledger().reserve_granted(args("a"), Grant{first, 0, kGpu, MigRef{1, 0, "1g.10gb"}, 1, true, "t"}));
  ASSERT_TRUE(ledger().release("a"));
  EXPECT_TRUE(state().mig_idle.empty());
  EXPECT_EQ(ledger_to_json(state()).substr(0, 12), "{\"version\":1");
}

TEST_F(LedgerMigTest, GrantedBookingIsExclusiveAndIdempotent) {
  const std::string first = inv_.gpus[0].mig_instances[0].uuid;
  const Grant g{first, 0, kGpu, MigRef{1, 0, "1g.10gb"}, 1, true, "t"};
  ASSERT_TRUE(ledger().reserve_granted(args("a"), g));
  auto same = ledger().reserve_granted(args("a"), g);
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->existing);
  auto other = ledger().reserve_granted(args("b"), g);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message, first + " is booked by a");
}

// What the provisioner books is checked against the bookings now: its GPU instance's memory (a
// sibling compute instance booked meanwhile counts) and one compute instance per container per GPU
// instance.
TEST_F(LedgerMigTest, GrantedComputeInstancesRespectTheirGpuInstance) {
  const std::uint64_t gi_memory = 40448 * kMiB;
  const Grant a{"MIG-00000000-0000-0000-0000-000000000001", 0, kGpu, MigRef{2, 0, "1c.3g.40gb"}, 30 * kGiB, true, "t"};
  ASSERT_TRUE(ledger().reserve_granted(args("a"), a, gi_memory));
  Grant b = a;
  b.device_uuid = "MIG-00000000-0000-0000-0000-000000000002";
  b.mig = MigRef{2, 1, "1c.3g.40gb"};
  b.bytes = 13482 * kMiB;
  auto over = ledger().reserve_granted(args("b"), b, gi_memory);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().message, "GPU 0 gi 2 has 9.5 GiB of its memory left; " + b.device_uuid + " needs 13.2 GiB");
  b.bytes = 9 * kGiB;
  ASSERT_TRUE(ledger().reserve_granted(args("b"), b, gi_memory));
  Grant c = b;
  c.device_uuid = "MIG-00000000-0000-0000-0000-000000000003";
  c.mig = MigRef{2, 2, "1c.3g.40gb"};
  c.bytes = 1;
  ReserveArgs second = args("a");
  second.device_key = "second";
  auto twice = ledger().reserve_granted(second, c, gi_memory);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message,
            "a holds a compute instance of GPU 0 gi 2 already; CUDA enumerates one compute instance per GPU instance");
}

TEST_F(LedgerMigTest, SyncAdoptsAndPrunesAndExpiryUsesTheTimeout) {
  LedgerState s;
  s.mig_idle.push_back(MigIdleRecord{"MIG-gone", kGpu, 1});
  s.mig_idle.push_back(MigIdleRecord{"MIG-other-gpu", "GPU-elsewhere", 1});
  ASSERT_TRUE(sync_idle_records(s, inv_.gpus[0], now_));
  ASSERT_EQ(s.mig_idle.size(), 3u);
  EXPECT_EQ(s.mig_idle[0].uuid, "MIG-other-gpu");
  EXPECT_FALSE(sync_idle_records(s, inv_.gpus[0], now_ + 1));
  s.mig_idle[1].since = now_ - 600;
  EXPECT_EQ(expired_idle(s, inv_.gpus[0], 600, now_), std::vector<std::string>{s.mig_idle[1].uuid});
  EXPECT_EQ(expired_idle(s, inv_.gpus[0], 601, now_), std::vector<std::string>{});
  auto idle = idle_mig_instances(inv_, s, now_);
  ASSERT_EQ(idle.size(), 2u);
  EXPECT_EQ(idle[0].gi, 1u);
  EXPECT_EQ(idle[0].idle_s, 600);
}

}  // namespace
}  // namespace gpufrac
