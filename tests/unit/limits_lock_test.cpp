// Slot liveness by OFD lock (limits_abi.h GPUFRAC_SLOT_LOCKED, limits/shim/gf_lock.h): the shim's
// claim and reclaim with a lock descriptor, and the host's readers (status, gc, the reclaimer's
// reading) judging LOCKED slots by their lock byte whatever pid the owner word names.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "gf_lock.h"
#include "gf_proc.h"
#include "gf_region.h"
#include "gpufrac/limits_abi.h"
#include "limits/host/region_channel.hpp"
#include "limits/host/region_file.hpp"

namespace gpufrac::limits {
namespace {

const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";

// A region file on disk, mapped as the shim maps it, and descriptors of it as processes hold them.
class LockedRegion : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-lock-test.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/usage";
    ASSERT_TRUE(create_region(path_, {"c", "/u", {{kGpu, 1000}}}));
    char err[256];
    r_ = gf_region_map(path_.c_str(), err, sizeof err);
    ASSERT_NE(r_, nullptr) << err;
  }
  void TearDown() override {
    if (r_ != nullptr) ::munmap(r_, sizeof(gpufrac_region));
    std::filesystem::remove_all(dir_);
  }
  // A process's own open file description of the region (what the shim opens at its claim).
  int open_rw() const { return ::open(path_.c_str(), O_RDWR | O_CLOEXEC); }
  // A claim as the process holding fd, with pid and start time in its owner word.
  int claim(int fd, std::uint64_t pid, std::uint64_t start, std::uint64_t bytes) {
    const int i = gf_slot_claim_locked(r_, gpufrac_owner(pid, start, GPUFRAC_SLOT_LOCKED), fd);
    if (i >= 0) r_->slots[i].used[0] = bytes;
    return i;
  }

  std::string dir_, path_;
  gpufrac_region* r_ = nullptr;
};

TEST_F(LockedRegion, ALockIsSeenFromAnotherDescriptionOnly) {
  const int a = open_rw(), b = open_rw(), ro = ::open(path_.c_str(), O_RDONLY);
  ASSERT_EQ(gf_slot_lock(a, 3), 0);
  EXPECT_EQ(gf_slot_lock_held(ro, 3), 1) << "a read-only descriptor is enough to ask";
  EXPECT_EQ(gf_slot_lock_held(a, 3), 0) << "a description never conflicts with itself";
  EXPECT_EQ(gf_slot_lock_held(ro, 4), 0) << "one byte per slot";
  EXPECT_EQ(gf_slot_lock(b, 3), -EAGAIN);
  EXPECT_EQ(gf_slot_lock(a, 3), 0) << "taken again through its own description";
  const int dup = ::dup(a);
  ::close(a);
  EXPECT_EQ(gf_slot_lock_held(ro, 3), 1) << "held while any descriptor of the description is open";
  ::close(dup);
  EXPECT_EQ(gf_slot_lock_held(ro, 3), 0) << "dropped with the description's last descriptor";
  EXPECT_EQ(gf_slot_lock(b, 3), 0);
  gf_slot_unlock(b, 3);
  EXPECT_EQ(gf_slot_lock_held(ro, 3), 0);
  EXPECT_EQ(gf_slot_lock_held(-1, 3), -EBADF);
  ::close(b);
  ::close(ro);
}

TEST_F(LockedRegion, ADeadOwnersSlotIsReclaimedByItsLockNotItsPid) {
  const int a = open_rw(), b = open_rw();
  // Both name this very process (pid and start time): two processes of two PID namespaces can.
  gf_proc_stat me{};
  ASSERT_EQ(gf_proc_stat_read("/proc/self/stat", &me), 0);
  const auto pid = static_cast<std::uint64_t>(::getpid());
  const int ia = claim(a, pid, me.start, 300), ib = claim(b, pid, me.start, 400);
  ASSERT_EQ(ia, 0);
  ASSERT_EQ(ib, 1) << "the same pid and start time take no one's slot over";
  EXPECT_EQ(gpufrac_owner_state(r_->slots[ia].owner), GPUFRAC_SLOT_LOCKED);
  const std::uint64_t me_reclaiming = gpufrac_owner(pid, me.start, 0);
  EXPECT_EQ(gf_region_reclaim_locked(r_, me_reclaiming, GF_CHECK_BOTH, "/proc", b, ib), 0u) << "a is alive";
  EXPECT_EQ(gf_region_reclaim(r_, gpufrac_owner(1, 1, 0), GF_CHECK_PROC, "/nonexistent"), 0u)
      << "without a descriptor a LOCKED slot is never judged dead";
  ::close(a);  // a dies: the kernel drops its lock; its pid still runs (this process)
  EXPECT_EQ(gf_region_reclaim_locked(r_, me_reclaiming, GF_CHECK_BOTH, "/proc", b, ib), 1u);
  EXPECT_EQ(r_->slots[ia].owner, 0u);
  EXPECT_EQ(r_->slots[ia].used[0], 0u);
  EXPECT_EQ(r_->slots[ib].used[0], 400u) << "its own slot is skipped";
  EXPECT_EQ(gf_slot_lock_held(b, static_cast<unsigned>(ia)), 0) << "the reclaimer's lock is dropped after";
  const int c = open_rw();
  EXPECT_EQ(claim(c, 7, 1, 10), ia) << "the freed slot is reused";
  ::close(b);
  ::close(c);
}

TEST_F(LockedRegion, AClaimSkipsABytesSomeoneHolds) {
  const int thief = open_rw(), a = open_rw();
  ASSERT_EQ(gf_slot_lock(thief, 0), 0);  // a free slot's byte locked: it is never claimed
  EXPECT_EQ(claim(a, 5, 5, 1), 1);
  ::close(thief);
  ::close(a);
}

TEST_F(LockedRegion, AForgedOwnerWordGainsNothing) {
  // A tenant writes a live process's identity into a slot without holding its byte: dead for the
  // container's next reclaim and for the host, whatever pid it names.
  const int b = open_rw();
  r_->slots[0].owner = gpufrac_owner(static_cast<std::uint64_t>(::getppid()), 1, GPUFRAC_SLOT_LOCKED);
  r_->slots[0].used[0] = 900;
  r_->slot_high_water = 1;
  const int ib = claim(b, 8, 8, 0);
  ASSERT_EQ(ib, 1);
  auto u = read_region_usage(path_);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->live_processes, 1u);
  EXPECT_EQ(u->devices.at(0).stale, 900u) << "the forged slot is dead for the host";
  std::uint64_t in_use = 0;
  EXPECT_EQ(gf_region_reserve(r_, &r_->slots[ib], 0, 500, 1000, &in_use, nullptr), -1);
  EXPECT_EQ(gf_region_reclaim_locked(r_, gpufrac_owner(8, 8, 0), GF_CHECK_SIGNAL, "/proc", b, ib), 1u);
  EXPECT_EQ(gf_region_reserve(r_, &r_->slots[ib], 0, 500, 1000, &in_use, nullptr), 0) << "its bytes are back";
  // A lock stolen on a dead slot's byte keeps that slot's bytes booked: to the thief's container.
  const int thief = open_rw();
  r_->slots[2].owner = gpufrac_owner(3, 3, GPUFRAC_SLOT_LOCKED);
  r_->slots[2].used[0] = 100;
  r_->slot_high_water = 3;
  ASSERT_EQ(gf_slot_lock(thief, 2), 0);
  EXPECT_EQ(gf_region_reclaim_locked(r_, gpufrac_owner(8, 8, 0), GF_CHECK_SIGNAL, "/proc", b, ib), 0u);
  EXPECT_EQ(gf_region_reserve(r_, &r_->slots[ib], 0, 450, 1000, &in_use, nullptr), -1);
  EXPECT_EQ(in_use, 600u) << "the container's own usage, no one else's";
  ::close(thief);
  ::close(b);
}

TEST_F(LockedRegion, TheHostCountsAndReclaimsByTheLock) {
  const int a = open_rw(), b = open_rw();
  const int ia = claim(a, 1, 1, 100), ib = claim(b, static_cast<std::uint64_t>(::getpid()), 1, 20);
  ASSERT_EQ(ia, 0);
  ASSERT_EQ(ib, 1);
  auto u = read_region_usage(path_, "/nonexistent");  // no pid is checked for a LOCKED slot
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->live_processes, 2u);
  EXPECT_EQ(u->devices.at(0).used, 120u);
  auto none = reclaim_region(path_);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, 0u) << "both alive, one with the host reclaimer's own pid";
  ::close(b);
  u = read_region_usage(path_);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->live_processes, 1u);
  EXPECT_EQ(u->dead_slots, 1u);
  EXPECT_EQ(u->devices.at(0).stale, 20u);
  const int fd = open_region(path_, false).value();
  auto buf = std::make_unique<gpufrac_region>();
  RegionReading rd;
  ASSERT_TRUE(read_region_reading(fd, path_, 0, *buf, rd));
  EXPECT_EQ(live_use(rd), 100u) << "the reclaimer's reading";
  ::close(fd);
  auto one = reclaim_region(path_);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(*one, 1u);
  EXPECT_EQ(r_->slots[ib].owner, 0u);
  EXPECT_EQ(r_->slots[ia].used[0], 100u);
  ::close(a);
}

TEST_F(LockedRegion, ALiveReclaimerHoldsTheByte) {
  const int reclaimer = open_rw(), b = open_rw();
  r_->slots[0].owner = gpufrac_owner(99999, 1, GPUFRAC_SLOT_RECLAIMING);  // a pid no one has
  r_->slots[0].used[0] = 50;
  r_->slot_high_water = 1;
  ASSERT_EQ(gf_slot_lock(reclaimer, 0), 0);
  auto n = reclaim_region(path_);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 0u) << "the host leaves a reclaim in progress";
  EXPECT_EQ(gf_region_reclaim_locked(r_, gpufrac_owner(1, 1, 0), GF_CHECK_SIGNAL, "/proc", b, -1), 0u);
  ::close(reclaimer);  // it died half-way
  EXPECT_EQ(gf_region_reclaim_locked(r_, gpufrac_owner(1, 1, 0), GF_CHECK_SIGNAL, "/proc", b, -1), 1u);
  EXPECT_EQ(r_->slots[0].owner, 0u);
  ::close(b);
}

TEST_F(LockedRegion, AKilledChildsSlotIsFreedAtOnce) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = open_rw();  // the child's own description, as the shim's fork handler makes it
    char ok = claim(fd, static_cast<std::uint64_t>(::getpid()), 1, 700) == 0 ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    ::pause();
    ::_exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  auto u = read_region_usage(path_);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->devices.at(0).used, 700u);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const int b = open_rw();
  const int ib = claim(b, 2, 2, 0);
  EXPECT_EQ(gf_region_reclaim_locked(r_, gpufrac_owner(2, 2, 0), GF_CHECK_SIGNAL, "/proc", b, ib), 1u);
  std::uint64_t in_use = 0;
  EXPECT_EQ(gf_region_reserve(r_, &r_->slots[ib], 0, 1000, 1000, &in_use, nullptr), 0) << "the whole limit";
  ::close(b);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace gpufrac::limits
