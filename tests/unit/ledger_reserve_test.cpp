// The ledger on a full state directory (a small tmpfs): a booking is refused when the room its
// release will need cannot be reserved, and a release, a rollback or a gc on a full directory
// leaves the ledger as it was before the booking (core/ledger/ledger_file.hpp, ledger.reserve).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/fs.hpp"
#include "core/ledger/ledger_file.hpp"
#include "ledger_fixture.hpp"
#include "small_tmpfs.hpp"

namespace gpufrac::testing {
namespace {

class LedgerReserveTest : public LedgerTest {
 protected:
  void SetUp() override {
    LedgerTest::SetUp();
    state_ = tmpfs_.mount(256 << 10);
    if (state_.empty()) GTEST_SKIP() << tmpfs_.skip_reason();
  }
  Ledger ledger() {
    LedgerOptions o = LedgerTest::ledger().options();
    o.path = state_ + "/ledger.json";
    o.lock_path = state_ + "/ledger.lock";
    return Ledger(o);
  }
  std::string text() { return fs::read_file(state_ + "/ledger.json").value_or("<none>"); }
  struct stat reserve_stat() {
    struct stat st {};
    EXPECT_EQ(::stat((state_ + "/ledger.reserve").c_str(), &st), 0) << "ledger.reserve exists";
    return st;
  }
  std::string no_room(const std::string& what) {
    return what + ": No space left on device (the state directory " + state_ +
           " is full); the ledger is unchanged: free space in it or make it larger";
  }

  SmallTmpfs tmpfs_;
  std::string state_;
};

TEST_F(LedgerReserveTest, TheReserveIsTheLedgerPlusAPage) {
  ASSERT_TRUE(ledger().reserve(args("a", "0.25"), inv_, cfg_));
  const auto st = reserve_stat();
  EXPECT_EQ(st.st_size, static_cast<off_t>(text().size() + 4096));
  EXPECT_GE(st.st_blocks * 512, st.st_size) << "allocated, not a hole";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(LedgerReserveTest, AReleaseOnAFullDirectoryLeavesTheLedgerAsBeforeTheBooking) {
  ASSERT_TRUE(ledger().reserve(args("a", "0.25"), inv_, cfg_));
  const std::string before = text();
  for (std::uint64_t kib = 0; kib <= 48; kib += 4) {
    ASSERT_TRUE(ledger().reserve(args("b", "0.25", 200), inv_, cfg_));
    tmpfs_.fill(kib << 10);
    auto released = ledger().release("b");
    ASSERT_TRUE(released) << kib << " KiB free: " << released.error().message;
    EXPECT_EQ(released->size(), 1u);
    EXPECT_EQ(text(), before) << kib << " KiB free";
    EXPECT_GE(reserve_stat().st_size, static_cast<off_t>(before.size() + 4096)) << "made again";
    tmpfs_.unfill();
  }
}

TEST_F(LedgerReserveTest, PoststopAndGcOnAFullDirectoryRelease) {
  ASSERT_TRUE(ledger().reserve(args("a", "0.25"), inv_, cfg_));
  const std::string before = text();
  ASSERT_TRUE(ledger().reserve(args("b", "0.25", 200), inv_, cfg_));
  tmpfs_.fill(0);
  auto stopped = ledger().release_stopped("b", "", 200);
  ASSERT_TRUE(stopped) << stopped.error().message;
  EXPECT_EQ(text(), before);
  tmpfs_.unfill();
  ASSERT_TRUE(ledger().reserve(args("b", "0.25", 200), inv_, cfg_));
  std::filesystem::remove_all(proc_ + "/200");  // pid 200 exits
  tmpfs_.fill(0);
  auto gc = ledger().gc();
  ASSERT_TRUE(gc) << gc.error().message;
  EXPECT_EQ(gc->reclaimed.size(), 1u);
  EXPECT_EQ(text(), before);
}

TEST_F(LedgerReserveTest, ABookingIsRefusedWhenItsReleaseCouldNotBeWritten) {
  tmpfs_.fill(0);
  auto first = ledger().reserve(args("a", "0.25"), inv_, cfg_);
  ASSERT_FALSE(first);
  const std::string reserve = state_ + "/ledger.reserve";
  EXPECT_TRUE(first.error().message.starts_with("cannot reserve ")) << first.error().message;
  EXPECT_TRUE(first.error().message.ends_with(" bytes in " + no_room(reserve + " for releasing bookings")))
      << first.error().message;
  EXPECT_FALSE(fs::exists(state_ + "/ledger.json")) << "nothing booked";
  tmpfs_.unfill();
  ASSERT_TRUE(ledger().reserve(args("a", "0.25"), inv_, cfg_));
  const std::string before = text();
  tmpfs_.fill(0);
  auto second = ledger().reserve(args("b", "0.25", 200), inv_, cfg_);
  ASSERT_FALSE(second) << "the reserve is for releases, never for a booking";
  EXPECT_TRUE(second.error().message.starts_with("cannot write " + state_ + "/.ledger.json.tmp."))
      << second.error().message;
  EXPECT_TRUE(second.error().message.ends_with(no_room(""))) << second.error().message;
  EXPECT_EQ(text(), before) << "nothing booked";
}

TEST_F(LedgerReserveTest, GcFitsTheReserveToTheLedger) {
  ASSERT_TRUE(ledger().reserve(args("a", "0.25"), inv_, cfg_));
  const std::string reserve = state_ + "/ledger.reserve";
  ::unlink(reserve.c_str());
  ASSERT_TRUE(ledger().fit_reserve());
  EXPECT_EQ(reserve_stat().st_size, static_cast<off_t>(text().size() + 4096)) << "made again";
  ASSERT_EQ(::truncate(reserve.c_str(), 200 << 10), 0);
  ASSERT_TRUE(ledger().fit_reserve());
  EXPECT_EQ(reserve_stat().st_size, static_cast<off_t>(text().size() + 4096)) << "shrunk";
  EXPECT_GE(reserve_stat().st_blocks * 512, reserve_stat().st_size);
}

}  // namespace
}  // namespace gpufrac::testing
