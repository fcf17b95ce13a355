// The host's bounded access to a container's usage region (limits/host/region_read.hpp,
// region_channel.hpp): a truncated, grown, garbage or non-regular region is refused as damaged in
// one line, reading never takes more than the region's size, the host never writes past it, and a
// region whose size flips under every reader and writer kills none of them (no SIGBUS: no mapping).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/fs.hpp"
#include "gpufrac/limits_abi.h"
#include "limits/host/region_channel.hpp"
#include "limits/host/region_file.hpp"
#include "limits/host/region_read.hpp"

namespace gpufrac::limits {
namespace {

const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";
constexpr std::size_t kSize = sizeof(gpufrac_region);

class RegionReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-region-read.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/usage";
    ASSERT_TRUE(create_region(path_, {"c", "/u", {{kGpu, 1000}}}));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string accepted() const {
    return "; accepted: a regular file of " + std::to_string(kSize) + " bytes (gpufrac region version 2)";
  }
  void resize(std::size_t size) const { ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(size)), 0); }
  std::size_t size() const { return static_cast<std::size_t>(std::filesystem::file_size(path_)); }

  std::string dir_, path_;
};

TEST_F(RegionReadTest, ATruncatedRegionIsDamagedInOneLine) {
  resize(0);
  auto u = read_region_usage(path_);
  ASSERT_FALSE(u);
  EXPECT_TRUE(region_damaged(u.error()));
  EXPECT_EQ(u.error().message, "usage region " + path_ + ": 0 bytes" + accepted());
  resize(kSize - 1);
  auto shorter = read_region_usage(path_);
  ASSERT_FALSE(shorter);
  EXPECT_EQ(shorter.error().message,
            "usage region " + path_ + ": " + std::to_string(kSize - 1) + " bytes" + accepted());
}

TEST_F(RegionReadTest, AnOversizedRegionIsDamagedAndNotReadPastItsSize) {
  resize(kSize + (64u << 20));  // what a tenant writing past the end leaves
  auto u = read_region_usage(path_);
  ASSERT_FALSE(u);
  EXPECT_TRUE(region_damaged(u.error()));
  EXPECT_EQ(u.error().message,
            "usage region " + path_ + ": " + std::to_string(kSize + (64u << 20)) + " bytes" + accepted());
  auto n = reclaim_region(path_);
  ASSERT_FALSE(n);
  EXPECT_TRUE(region_damaged(n.error()));
}

TEST_F(RegionReadTest, GarbageOfTheRightSizeIsDamaged) {
  std::string junk(kSize, '\0');
  std::mt19937 rng(7);
  for (auto& c : junk) c = static_cast<char>(rng());
  ASSERT_TRUE(fs::write_file_atomic(path_, junk));
  auto u = read_region_usage(path_);
  ASSERT_FALSE(u);
  EXPECT_TRUE(region_damaged(u.error()));
  EXPECT_EQ(u.error().message,
            "usage region " + path_ + ": not a gpufrac region of version 2 or 1 (magic, version or size differ)");
  auto fd = open_region(path_, true);
  ASSERT_TRUE(fd);
  fs::UniqueFd owned(*fd);
  gpufrac_region buf{};
  RegionReading rd;
  auto r = read_region_reading(owned.get(), path_, 0, buf, rd);
  ASSERT_FALSE(r);
  EXPECT_TRUE(region_damaged(r.error()));
}

TEST_F(RegionReadTest, AHugeSlotHighWaterReadsAtMostEverySlot) {
  {
    auto fd = open_region(path_, true);
    ASSERT_TRUE(fd);
    fs::UniqueFd owned(*fd);
    const std::uint32_t hw = 0xffffffffu;
    ASSERT_TRUE(write_region_field(owned.get(), path_, offsetof(gpufrac_region, slot_high_water), &hw, sizeof hw));
  }
  auto u = read_region_usage(path_);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->live_processes + u->dead_slots, 0u);
  auto fd = open_region(path_, false);
  ASSERT_TRUE(fd);
  fs::UniqueFd owned(*fd);
  gpufrac_region buf{};
  RegionReading rd;
  ASSERT_TRUE(read_region_reading(owned.get(), path_, 99, buf, rd));
  EXPECT_EQ(rd.owners.size(), static_cast<std::size_t>(GPUFRAC_MAX_SLOTS));
}

TEST_F(RegionReadTest, NotARegularFileOrASymlinkIsRefusedWithoutBlocking) {
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  ASSERT_EQ(::mkfifo(path_.c_str(), 0666), 0);  // no writer: a blocking open would hang
  auto fifo = read_region_usage(path_);
  ASSERT_FALSE(fifo);
  EXPECT_TRUE(region_damaged(fifo.error()));
  EXPECT_EQ(fifo.error().message, "usage region " + path_ + ": not a regular file" + accepted());
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  ASSERT_TRUE(create_region(dir_ + "/elsewhere", {"c", "/u", {{kGpu, 1000}}}));
  ASSERT_EQ(::symlink((dir_ + "/elsewhere").c_str(), path_.c_str()), 0);
  auto link = read_region_usage(path_);
  ASSERT_FALSE(link);
  EXPECT_FALSE(region_damaged(link.error()));
  EXPECT_EQ(link.error().err, ELOOP);
}

TEST_F(RegionReadTest, TheHostNeverWritesIntoAWrongSizedRegion) {
  auto fd = open_region(path_, true);
  ASSERT_TRUE(fd);
  fs::UniqueFd owned(*fd);
  resize(0);
  auto p = publish_region(owned.get(), path_, 7, true, 0, 1000);
  ASSERT_FALSE(p);
  EXPECT_TRUE(region_damaged(p.error()));
  auto a = answer_region(owned.get(), path_, 3, GPUFRAC_RECLAIM_NONE);
  ASSERT_FALSE(a);
  EXPECT_EQ(size(), 0u) << "nothing written: the file did not grow";
  resize(kSize * 2);
  EXPECT_FALSE(publish_region(owned.get(), path_, 7, false, 0, 0));
  EXPECT_EQ(size(), kSize * 2);
}

TEST_F(RegionReadTest, PublishAndAnswerStoreTheirFieldsOnly) {
  auto fd = open_region(path_, true);
  ASSERT_TRUE(fd);
  fs::UniqueFd owned(*fd);
  ASSERT_TRUE(publish_region(owned.get(), path_, 1234, true, 2, 5000));
  ASSERT_TRUE(answer_region(owned.get(), path_, 9, GPUFRAC_RECLAIM_FREED));
  auto copy = read_region_copy(path_);
  ASSERT_TRUE(copy) << copy.error().message;
  const gpufrac_region& r = **copy;
  EXPECT_EQ(r.reclaimer_beat, 1234u);
  EXPECT_EQ(r.burst_device, 2u);
  EXPECT_EQ(r.burst_ceiling, 5000u);
  EXPECT_EQ(r.reclaim_answered, 9u);
  EXPECT_EQ(r.reclaim_answer, GPUFRAC_RECLAIM_FREED);
  EXPECT_EQ(r.magic, GPUFRAC_REGION_MAGIC);
  EXPECT_EQ(r.limit[0], 1000u);
  EXPECT_EQ(size(), kSize);
}

// A child flips the region between 0 bytes and its full size (and writes garbage into it) as fast
// as it can, while this process reads, reclaims, publishes and answers through it: any SIGBUS ends
// this test binary. Every call either succeeds or says "damaged"; none writes past the size.
TEST_F(RegionReadTest, ARegionFlippingSizeKillsNoReader) {
  // Its first page, with a dead process in slot 0, written back after each growth: gc then finds a
  // dead slot and maps the region (guarded) while it is truncated.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  std::string page;
  {
    auto fd = open_region(path_, true);
    ASSERT_TRUE(fd);
    fs::UniqueFd owned(*fd);
    const std::uint64_t owner = gpufrac_owner(static_cast<std::uint64_t>(gone), 1, GPUFRAC_SLOT_OWNED);
    const std::uint32_t hw = 1;
    ASSERT_TRUE(write_region_field(owned.get(), path_, offsetof(gpufrac_region, slots), &owner, sizeof owner));
    ASSERT_TRUE(write_region_field(owned.get(), path_, offsetof(gpufrac_region, slot_high_water), &hw, sizeof hw));
    auto copy = read_region_copy(path_);
    ASSERT_TRUE(copy);
    page.assign(reinterpret_cast<const char*>(copy->get()), 4096);
  }
  const pid_t flipper = ::fork();
  ASSERT_GE(flipper, 0);
  if (flipper == 0) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    const std::string junk(4096, '\x5a');
    for (unsigned i = 0;; ++i) {
      if (::ftruncate(fd, (i & 1) != 0 ? 0 : static_cast<off_t>(kSize)) != 0) ::_exit(3);
      if ((i & 1) == 0 && ::pwrite(fd, page.data(), page.size(), 0) < 0) ::_exit(4);
      if (i % 7 == 0 && ::pwrite(fd, junk.data(), junk.size(), 8192) < 0) ::_exit(4);
    }
  }
  auto fd = open_region(path_, true);
  ASSERT_TRUE(fd);
  fs::UniqueFd owned(*fd);
  gpufrac_region buf{};
  unsigned ok = 0, damaged = 0, other = 0;
  auto count = [&](const Result<>& r) { (r ? ok : region_damaged(r.error()) ? damaged : other)++; };
  for (int i = 0; i < 3000; ++i) {
    auto u = read_region_usage(path_);
    count(u ? Result<>{} : Result<>{std::unexpected(u.error())});
    auto n = reclaim_region(path_);
    count(n ? Result<>{} : Result<>{std::unexpected(n.error())});
    RegionReading rd;
    count(read_region_reading(owned.get(), path_, 0, buf, rd));
    count(publish_region(owned.get(), path_, 5, true, 0, 100));
    count(answer_region(owned.get(), path_, 1, GPUFRAC_RECLAIM_NONE));
  }
  ::kill(flipper, SIGKILL);
  int status = 0;
  ::waitpid(flipper, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the flipper ran throughout: " << status;
  EXPECT_EQ(other, 0u) << "every failure is a damaged region";
  EXPECT_GT(damaged, 0u) << "the flips were seen";
  EXPECT_LE(size(), kSize) << "the host never grew it past the region's size";
  std::printf("flipping region: %u calls succeeded, %u refused as damaged\n", ok, damaged);
}

}  // namespace
}  // namespace gpufrac::limits
