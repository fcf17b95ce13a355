// Each process's own view of the queue (limits/shim/lease_view.c; docs/design-queue-lanes.md part 2),
// in isolation: monotone lanes, join at the reader's clock, an honest lane is its place, and observed
// holding against a lane that stays at the floor whatever its slot is charged.
#include <sys/mman.h>

#include <cstdint>

#include <gtest/gtest.h>

#include "gf_arbiter.h"

namespace {

constexpr const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";
constexpr std::uint64_t kMs = 1000000;

class ViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gpufrac_arbiter_params p;
    gf_arbiter_default_params(&p);
    gf_arbiter_slots_format(&slots_, kGpu, &p);
    gf_arbiter_format(&lease_);
    m_.lease = &lease_;
    m_.slots = &slots_;
    m_.table = lanes_;
    ASSERT_EQ(gf_arbiter_setup(&m_, "reader", 1, 700000, 0, 1), 0);
    ASSERT_EQ(gf_arbiter_setup(&m_, "liar", 2, 300000, 0, 1), 1);
    char err[256];
    ASSERT_EQ(gf_lease_init(&r_, &m_, 1, 7, err, sizeof err), 0) << err;
  }
  // One look at the liar's lane (runnable: it says it waits).
  void look(int runnable = 1) { gf_view_lane(&r_, 1, &lanes_[1], runnable); }
  std::uint64_t liar() { return gf_view_place(&r_, 1); }
  gpufrac_arbiter_slots slots_{};
  gpufrac_arbiter lease_{};
  gpufrac_arbiter_lane lanes_[GPUFRAC_ARBITER_SLOTS]{};
  gf_arb m_{};
  gf_lease r_{};
};

TEST_F(ViewTest, ALaneNeverMovesBackAndItsLieIsNoted) {
  lanes_[1].vtime = 5000;
  look();
  EXPECT_EQ(liar(), 5000u) << "first seen ahead of the clock (0): at its lane";
  lanes_[1].vtime = 4000;
  look();
  EXPECT_EQ(liar(), 5000u) << "moved back: ignored";
  EXPECT_EQ(lanes_[0].suspect[0].slot, 2u) << "noted in the reader's own lane";
  EXPECT_EQ(lanes_[0].suspect[0].what, GF_LIE_BACK);
  lanes_[1].vtime = 5000;
  look();
  EXPECT_EQ(liar(), 5000u) << "back up to where it was: nothing new";
  lanes_[1].vtime = 5500;
  look();
  EXPECT_EQ(liar(), 5500u) << "moved on past the most it said by 500: raised by 500";
}

// Two lag bounds of the liar's own time (weight 300000): how far a lane may lag what it was watched to hold.
constexpr std::uint64_t kSlack = 2 * (20 + 280) * kMs * 1000 / 300000;

TEST_F(ViewTest, ASlotFirstSeenJoinsAtTheReadersClockLessTheSlackAndDoesNotFollowTheClock) {
  gf_view_raise(&r_, 9000000000ull);
  lanes_[1].vtime = 0;  // far behind: a lane that claims credit
  look();
  EXPECT_EQ(liar(), 9000000000ull - kSlack) << "joins at the clock, less the slack";
  gf_view_raise(&r_, 20000000000ull);
  look();
  EXPECT_EQ(liar(), 9000000000ull - kSlack) << "readers' clocks differ: a place does not follow the clock";
  lanes_[1].vtime = 12000000000ull;
  look();
  EXPECT_EQ(liar(), 12000000000ull) << "a lane ahead of what was watched is the place";
}

// An honest slot's lane carries its charges; a watcher that saw only part of its holding, or saw it
// before the charge reached the lane, still puts it at its lane: every reader reads the same lanes,
// so honest views agree.
TEST_F(ViewTest, AnHonestLaneIsItsPlaceWhateverItsReaderWatched) {
  std::uint64_t t = 1000 * kMs, vt = 5000000000ull;
  lanes_[1].vtime = vt;
  look();
  for (std::uint32_t epoch = 1; epoch <= 200; epoch++) {
    const std::uint64_t w = gpufrac_lease_word(2, 1, epoch, 0), held = (epoch % 3 == 0 ? 200 : 20) * kMs;
    gf_view_watch(&r_, w, t, 0);
    t += held;
    gf_view_watch(&r_, w, t, t);
    gf_view_watch(&r_, gpufrac_lease_word(1, 1, epoch + 1000, 0), t, 0);  // the reader claims
    EXPECT_EQ(liar(), vt) << "watched the word before its holder stored the charge: still its lane";
    vt += held * 1000 / 300000;  // the holder's charge reaches its lane
    lanes_[1].vtime = vt;
    look();
    EXPECT_EQ(liar(), vt) << "epoch " << epoch;
    t += 20 * kMs;
  }
}

// The liar's lane stays at the floor whatever it is charged (a tool rewrites it after each charge):
// the reader, which decides at the end of each of its own leases, charges it the time it watched it
// hold. Over 1000 leases of 20 ms the liar (30 %) gets its weight's part plus the slack's leases once:
// over the second 500 it gets its weight's part and at most one lease more.
TEST_F(ViewTest, ObservedHoldingBeatsALaneStuckAtTheFloor) {
  const std::uint64_t floor = 0;
  std::uint64_t t = 1000 * kMs;
  int liar_leases = 0, late = 0;
  for (std::uint32_t epoch = 1; epoch <= 1000; epoch++) {
    lanes_[1].vtime = floor;
    look();
    if (gf_vt_before(liar(), r_.my_vt)) {  // the pick: least place first
      liar_leases++;
      late += epoch > 500;
      gf_view_watch(&r_, gpufrac_lease_word(2, 1, epoch, 0), t, t);
      t += 20 * kMs;
      gf_view_watch(&r_, gpufrac_lease_word(2, 1, epoch, 0), t, t);         // active to its end
      gf_view_watch(&r_, gpufrac_lease_word(1, 1, epoch + 1000, 0), t, 0);  // the reader claims
    } else {
      r_.my_vt += 20 * kMs * 1000 / 700000;
      t += 20 * kMs;
      gf_view_raise(&r_, r_.my_vt);  // as its claims and renewals do
    }
  }
  const int slack_leases = static_cast<int>(kSlack * 300000 / 1000 / (20 * kMs));
  EXPECT_GE(liar_leases, 299);
  EXPECT_LE(liar_leases, 301 + slack_leases) << "its weight (300 of 1000 leases) and the slack once";
  EXPECT_GE(late, 149);
  EXPECT_LE(late, 151) << "no gain at a rate: its weight over the second 500 leases";
}

}  // namespace
