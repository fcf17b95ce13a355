#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/process.hpp"
#include "fake_proc.hpp"
#include "ledger_fixture.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

using testing::LedgerTest;
using testing::write_stat;

TEST_F(LedgerTest, ReserveRecordsTheBooking) {
  auto b = ledger().reserve(args("c1", "0.25"), inv_, cfg_);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_FALSE(b->existing);
  EXPECT_EQ(b->grant.bytes, 10134 * kMiB);
  LedgerEntry want{"c1",
                   "",
                   inv_.gpus[0].uuid,
                   0,
                   inv_.gpus[0].uuid,
                   std::nullopt,
                   10134 * kMiB,
                   false,
                   "fraction=0.25",
                   BookingSource::hook,
                   100,
                   5000,
                   now_,
                   "",
                   "",
                   250'000};
  EXPECT_EQ(entries(), std::vector<LedgerEntry>{want});
}

TEST_F(LedgerTest, MissingFileIsEmpty) {
  EXPECT_TRUE(entries().empty());
}

TEST_F(LedgerTest, ReserveIsIdempotentPerContainerAndKey) {
  auto first = ledger().reserve(args("c1", "0.25"), inv_, cfg_);
  auto again = ledger().reserve(args("c1", "0.25"), inv_, cfg_);
  ASSERT_TRUE(first && again);
  EXPECT_TRUE(again->existing);
  EXPECT_EQ(again->grant.device_uuid, first->grant.device_uuid);
  EXPECT_EQ(again->grant.bytes, first->grant.bytes);
  EXPECT_EQ(again->grant.reason, "existing booking of c1 (fraction=0.25)");
  auto other_key = args("c1", "0.25");
  other_key.device_key = "gpufrac.io/gpu=0-0.25";
  ASSERT_TRUE(ledger().reserve(other_key, inv_, cfg_));
  EXPECT_EQ(entries().size(), 2u);
  auto changed = ledger().reserve(args("c1", "0.5"), inv_, cfg_);
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().message,
            "container c1 already holds a booking for fraction=0.25; release it before asking for fraction=0.5");
}

TEST_F(LedgerTest, PendingBookingGetsItsPid) {
  ASSERT_TRUE(ledger().reserve(args("c1", "0.25", 0), inv_, cfg_));
  EXPECT_TRUE(entries().at(0).pending());
  auto again = ledger().reserve(args("c1", "0.25", 200), inv_, cfg_);  // a retried hook with the pid
  ASSERT_TRUE(again);
  EXPECT_EQ(entries().at(0).pid, 200);
  EXPECT_EQ(entries().at(0).pid_start, 6000u);
}

TEST_F(LedgerTest, Attach) {
  ASSERT_TRUE(ledger().reserve(args("c1", "0.25", 0), inv_, cfg_));
  auto attached = ledger().attach("c1", 100);
  ASSERT_TRUE(attached) << attached.error().message;
  ASSERT_EQ(attached->size(), 1u);
  EXPECT_EQ(entries().at(0).pid, 100);
  EXPECT_EQ(entries().at(0).pid_start, 5000u);
  EXPECT_TRUE(ledger().attach("c1", 100));  // again: nothing changes
  EXPECT_EQ(ledger().attach("nobody", 100).error().message,
            "container nobody has no booking to attach (released, or pending for more than 120 s)");
  EXPECT_EQ(ledger().attach("c1", 999).error().message.substr(0, 29), "process 999 does not exist (c");
  EXPECT_EQ(ledger().attach("c1", 0).error().message, "pid 0 is not valid; use the container's host pid");
}

TEST_F(LedgerTest, ReleaseIsIdempotent) {
  ASSERT_TRUE(ledger().reserve(args("c1", "0.25"), inv_, cfg_));
  auto other = args("c1", "0.25");
  other.device_key = "second";
  ASSERT_TRUE(ledger().reserve(other, inv_, cfg_));
  ASSERT_TRUE(ledger().reserve(args("c2", "0.25"), inv_, cfg_));
  auto removed = ledger().release("c1");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->size(), 2u);
  EXPECT_EQ(ledger().release("c1")->size(), 0u);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(entries()[0].container_id, "c2");
}

TEST_F(LedgerTest, RefusalLeavesTheLedgerAlone) {
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(ledger().reserve(args("c" + std::to_string(i), "0.25"), inv_, cfg_));
  auto before = entries();
  auto r = ledger().reserve(args("c9", "0.25"), inv_, cfg_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "no GPU has 9.9 GiB free for fraction=0.25: GPU 0 0 B, GPU 1 0 B");
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  EXPECT_EQ(entries(), before);
}

TEST_F(LedgerTest, ReserveReclaimsDeadProcessesFirst) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ledger().reserve(args("dead" + std::to_string(i), "0.25"), inv_, cfg_));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ledger().reserve(args("live" + std::to_string(i), "0.25", 200), inv_, cfg_));
  write_stat(proc_, 100, 'S', 7777);  // pid 100 now belongs to another process
  auto b = ledger().reserve(args("new", "1", 200), inv_, cfg_);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->grant.gpu_index, 0u);
  EXPECT_TRUE(b->grant.exclusive);
  ASSERT_EQ(b->reclaimed.size(), 4u);
  EXPECT_EQ(b->reclaimed[0].why, "pid 100 was reused");
  EXPECT_EQ(entries().size(), 5u);
}

TEST_F(LedgerTest, GcReclaimsExitedReusedAndExpiredPending) {
  ASSERT_TRUE(ledger().reserve(args("exited", "0.1", 100), inv_, cfg_));
  ASSERT_TRUE(ledger().reserve(args("reused", "0.1", 200), inv_, cfg_));
  write_stat(proc_, 300, 'S', 1);
  ASSERT_TRUE(ledger().reserve(args("zombie", "0.1", 300), inv_, cfg_));
  write_stat(proc_, 400, 'S', 1);
  ASSERT_TRUE(ledger().reserve(args("alive", "0.1", 400), inv_, cfg_));
  ASSERT_TRUE(ledger().reserve(args("pending", "0.1", 0), inv_, cfg_));
  now_ += 60;
  ASSERT_TRUE(ledger().reserve(args("young", "0.1", 0), inv_, cfg_));
  std::filesystem::remove_all(proc_ + "/100");
  write_stat(proc_, 200, 'S', 1);
  write_stat(proc_, 300, 'Z', 1);
  now_ += 61;
  auto report = ledger().gc();
  ASSERT_TRUE(report) << report.error().message;
  std::vector<std::string> whys;
  for (const auto& r : report->reclaimed) whys.push_back(r.entry.container_id + ": " + r.why);
  EXPECT_EQ(whys, (std::vector<std::string>{"exited: process 100 exited", "reused: pid 200 was reused",
                                            "zombie: process 300 exited", "pending: pending for 121 s"}));
  EXPECT_EQ(report->kept, 2u);
  EXPECT_EQ(entries().size(), 2u);
  EXPECT_EQ(ledger().gc()->reclaimed.size(), 0u);
}

TEST_F(LedgerTest, GcRemovesStaleTempFiles) {
  ASSERT_TRUE(ledger().reserve(args("c1", "0.25"), inv_, cfg_));
  ASSERT_TRUE(fs::write_file_atomic(dir_ + "/state/.ledger.json.tmp.123.456", "{"));
  ASSERT_TRUE(fs::write_file_atomic(dir_ + "/state/unrelated", "x"));
  auto report = ledger().gc();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->temp_files_removed, std::vector<std::string>{dir_ + "/state/.ledger.json.tmp.123.456"});
  EXPECT_TRUE(fs::exists(dir_ + "/state/unrelated"));
}

TEST_F(LedgerTest, DamagedLedgerIsReportedNotOverwritten) {
  ASSERT_TRUE(fs::make_dirs(dir_ + "/state"));
  ASSERT_TRUE(fs::write_file_atomic(dir_ + "/state/ledger.json", "{\"version\": 1, \"entries\": [1]}"));
  auto r = ledger().reserve(args("c1", "0.25"), inv_, cfg_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::internal);
  EXPECT_EQ(r.error().message, "while booking c1: " + dir_ + "/state/ledger.json: entries[0]: must be an object");
  EXPECT_EQ(*fs::read_file(dir_ + "/state/ledger.json"), "{\"version\": 1, \"entries\": [1]}");
}

TEST_F(LedgerTest, UntrustedIdsAreRefused) {
  for (const std::string& id :
       std::vector<std::string>{"", "../x", "a/b", ".hidden", "a..b", std::string(129, 'a'), std::string("a\0b", 3)}) {
    auto r = ledger().reserve(args(id, "0.25"), inv_, cfg_);
    ASSERT_FALSE(r) << id;
    EXPECT_EQ(r.error().kind, ErrorKind::user);
    EXPECT_TRUE(r.error().message.starts_with("container id \"")) << r.error().message;
    EXPECT_FALSE(ledger().release(id));
  }
  auto key = args("c1", "0.25");
  key.device_key = "a b";
  EXPECT_EQ(ledger().reserve(key, inv_, cfg_).error().message,
            "device key \"a b\" is not valid; use at most 128 printable ASCII characters without spaces or quotes");
  EXPECT_FALSE(fs::exists(dir_ + "/state/ledger.json"));
}

TEST_F(LedgerTest, UnknownPidIsRefused) {
  auto r = ledger().reserve(args("c1", "0.25", 999), inv_, cfg_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "process 999 does not exist (cannot open " + proc_ + "/999/stat: No such file or directory)");
  EXPECT_EQ(ledger().reserve(args("c1", "0.25", -5), inv_, cfg_).error().message, "pid -5 is not valid; use 1-4194304");
}

TEST_F(LedgerTest, RealProcessLiveness) {
  LedgerOptions o = ledger().options();
  o.proc_root = "/proc";
  Ledger real(o);
  ASSERT_TRUE(real.reserve(args("me", "0.25", ::getpid()), inv_, cfg_));
  auto e = real.read()->entries.at(0);
  EXPECT_EQ(e.pid_start, read_proc_stat("/proc", ::getpid())->start_time);
  EXPECT_EQ(real.gc()->reclaimed.size(), 0u);
}

}  // namespace
}  // namespace gpufrac
