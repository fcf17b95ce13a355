// The lease file of a GPU's compute arbiter against a tenant that resizes it or changes its mode
// (limits/host/arbiter_lease.hpp, issue 42 items 1, 2 and 7): the host never maps it, so nothing it
// does there kills a host process; a file of another size, mode or owner is flagged, repaired in
// place at the next booking and at gc (noted for status), and removed by gc once the GPU has no share.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gf_arbiter.h"
#include "limits/host/arbiter_file.hpp"
#include "limits/host/arbiter_lanes.hpp"
#include "limits/host/arbiter_lease.hpp"

namespace {

using namespace gpufrac;
using namespace gpufrac::limits;

constexpr const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";
constexpr std::size_t kLeaseSize = sizeof(gpufrac_arbiter);

class LeaseFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-lease-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/compute/" + kGpu;
    ASSERT_TRUE(ensure_arbiter(path_, kGpu));
    ASSERT_TRUE(attach_arbiter_slot(path_, "c1", 300000, ComputeMode::fair, ComputePriority::normal));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  struct stat stat_of() const {
    struct stat st {};
    EXPECT_EQ(::stat(path_.c_str(), &st), 0);
    return st;
  }
  std::vector<std::string> tampered() const {
    auto v = read_arbiter(path_);
    EXPECT_TRUE(v) << v.error().message;
    return v ? v->tampered : std::vector<std::string>{};
  }
  std::string dir_, path_;
};

// A tenant flips the lease file between 0 bytes and full size while the host reads it, books and
// frees slots on it: on main `read_arbiter` and `attach_arbiter_slot` mapped it and died of SIGBUS.
TEST_F(LeaseFileTest, AFileCutShortUnderTheHostKillsNothing) {
  std::atomic<bool> stop{false};
  std::thread flipper([&] {
    while (!stop.load()) {
      (void)::truncate(path_.c_str(), 0);
      (void)::truncate(path_.c_str(), kLeaseSize);
    }
  });
  for (int i = 0; i < 2000; i++) {
    (void)read_arbiter(path_);
    (void)attach_arbiter_slot(path_, "c2", 100000, ComputeMode::fair, ComputePriority::normal);
    (void)release_arbiter_slots(path_, "c2");
    (void)ensure_arbiter(path_, kGpu);
  }
  stop = true;
  flipper.join();
  ASSERT_EQ(::truncate(path_.c_str(), 0), 0);
  auto v = read_arbiter(path_);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_GE(v->tampered.size(), 2u) << "(then the note of the last repair)";
  v->tampered.resize(2);
  EXPECT_EQ(v->tampered, (std::vector<std::string>{
                             "its lease file's header: wrong magic 0x00000000; accepted: 0x42524147 (gpufrac compute "
                             "arbiter)",
                             "its lease file is 0 bytes (the host made 256)"}));
  EXPECT_EQ(v->slots.size(), 1u) << "the slots file is intact";
}

// A tenant grows the lease file: status says so, the next booking shrinks it back in place (its
// space comes back, the GPU's containers keep one arbiter), and says what it did.
TEST_F(LeaseFileTest, AGrownFileIsFlaggedAndShrunkInPlace) {
  const ino_t ino = stat_of().st_ino;
  ASSERT_EQ(::truncate(path_.c_str(), 8 << 20), 0);
  {
    std::FILE* f = std::fopen(path_.c_str(), "r+");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fseek(f, (8 << 20) - 4096, SEEK_SET), 0);
    std::string page(4096, 'x');
    ASSERT_EQ(std::fwrite(page.data(), 1, page.size(), f), page.size());
    std::fclose(f);
  }
  EXPECT_EQ(tampered(), std::vector<std::string>{"its lease file is 8388608 bytes (the host made 256)"});
  auto fixed = ensure_arbiter(path_, kGpu);
  ASSERT_TRUE(fixed) << fixed.error().message;
  EXPECT_EQ(fixed->what, unsigned{GPUFRAC_LEASE_REPAIRED_SIZE});
  EXPECT_EQ(fixed->phrases, std::vector<std::string>{"its lease file is 8388608 bytes (the host made 256)"});
  const struct stat st = stat_of();
  EXPECT_EQ(st.st_ino, ino) << "in place";
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), kLeaseSize);
  EXPECT_LE(static_cast<std::size_t>(st.st_blocks) * 512, kLeaseSize + 4096) << "its space came back";
  EXPECT_EQ(tampered(),
            std::vector<std::string>{"the host repaired its lease file's size 0 s ago (a container changed it)"});
  auto again = ensure_arbiter(path_, kGpu);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->what, 0u) << "nothing left to repair";
}

// `chmod 600` from inside a container: flagged, and put back to 0666 by the next booking and by gc.
TEST_F(LeaseFileTest, AModeChangeIsFlaggedAndRepaired) {
  ASSERT_EQ(::chmod(path_.c_str(), 0600), 0);
  EXPECT_EQ(tampered(), std::vector<std::string>{"its lease file's mode is 0600 (the host made 0666)"});
  auto swept = sweep_arbiter(path_, {"c1"}, 0);
  ASSERT_TRUE(swept) << swept.error().message;
  EXPECT_FALSE(swept->removed) << "c1 is still booked";
  EXPECT_EQ(swept->repaired, std::vector<std::string>{"its lease file's mode is 0600 (the host made 0666)"});
  EXPECT_EQ(stat_of().st_mode & 07777, 0666u);
  ASSERT_EQ(::chmod(path_.c_str(), 0), 0);
  auto fixed = ensure_arbiter(path_, kGpu);
  ASSERT_TRUE(fixed);
  EXPECT_EQ(fixed->what, unsigned{GPUFRAC_LEASE_REPAIRED_MODE});
  EXPECT_EQ(stat_of().st_mode & 07777, 0666u);
  EXPECT_EQ(tampered(),
            std::vector<std::string>{"the host repaired its lease file's mode 0 s ago (a container changed it)"});
}

// Once the GPU has no share left, gc removes its arbiter whatever a tenant did to it (on main a grown
// lease file stayed for good); the next booking makes a fresh one.
TEST_F(LeaseFileTest, GcRemovesTheArbiterOfAGpuWithoutShares) {
  ASSERT_EQ(::truncate(path_.c_str(), 8 << 20), 0);
  auto swept = sweep_arbiter(path_, {}, 0);
  ASSERT_TRUE(swept) << swept.error().message;
  EXPECT_EQ(swept->freed, std::vector<std::string>{"c1"});
  EXPECT_TRUE(swept->removed);
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".slots"));
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  ASSERT_TRUE(attach_arbiter_slot(path_, "c3", 300000, ComputeMode::fair, ComputePriority::normal));
  EXPECT_EQ(static_cast<std::size_t>(stat_of().st_size), kLeaseSize);
  EXPECT_TRUE(tampered().empty());
}

// Layout 3: a new slot gets a fresh lane file (vtime = the lease file's vclock, nothing charged) in
// <lease file>.lanes/<key>; the same container again keeps its own lane; release removes it.
TEST_F(LeaseFileTest, ANewSlotsLaneFileStartsAtVclock) {
  {
    std::FILE* f = std::fopen(path_.c_str(), "r+");
    const std::uint64_t vclock = 123456789;
    std::fseek(f, offsetof(gpufrac_arbiter, vclock), SEEK_SET);
    std::fwrite(&vclock, sizeof vclock, 1, f);
    std::fclose(f);
  }
  ASSERT_TRUE(attach_arbiter_slot(path_, "c2", 100000, ComputeMode::fair, ComputePriority::normal));
  LaneCopy c = read_lane_file(path_, "c2", ::geteuid(), ::getegid());
  EXPECT_TRUE(c.readable);
  EXPECT_TRUE(c.wrong.empty());
  EXPECT_EQ(c.lane.vtime, 123456789u);
  EXPECT_EQ(c.lane.charged_ns, 0u);
  struct stat st {};
  ASSERT_EQ(::stat(arbiter_lane_path(path_, "c2").c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), sizeof(gpufrac_arbiter_lane));
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  EXPECT_GE(static_cast<std::size_t>(st.st_blocks) * 512, sizeof(gpufrac_arbiter_lane)) << "no hole";
  {
    std::FILE* f = std::fopen(arbiter_lane_path(path_, "c2").c_str(), "r+");
    const std::uint64_t charged = 77;
    std::fseek(f, offsetof(gpufrac_arbiter_lane, charged_ns), SEEK_SET);
    std::fwrite(&charged, sizeof charged, 1, f);
    std::fclose(f);
  }
  ASSERT_TRUE(attach_arbiter_slot(path_, "c2", 100000, ComputeMode::fair, ComputePriority::normal));
  EXPECT_EQ(read_lane_file(path_, "c2", ::geteuid(), ::getegid()).lane.charged_ns, 77u) << "the same container";
  ASSERT_EQ(release_arbiter_slots(path_, "c2"), 1u);
  EXPECT_FALSE(std::filesystem::exists(arbiter_lane_path(path_, "c2")));
  EXPECT_TRUE(std::filesystem::exists(arbiter_lane_path(path_, "c1")));
}

// A container can resize or chmod its own lane through its read-write bind: status names the lane,
// gc puts it back in place and removes lane files of no slot; an arbiter gc removes takes its lanes.
TEST_F(LeaseFileTest, ALaneFileChangedIsFlaggedAndRepaired) {
  const std::string lane = arbiter_lane_path(path_, "c1");
  ASSERT_EQ(::truncate(lane.c_str(), 1 << 20), 0);
  ASSERT_EQ(::chmod(lane.c_str(), 0600), 0);
  EXPECT_EQ(tampered(),
            (std::vector<std::string>{"slot 0: the lane file of \"c1\" is 1048576 bytes (the host made 256)",
                                      "slot 0: the lane file of \"c1\"'s mode is 0600 (the host made 0666)"}));
  ASSERT_EQ(::close(::open((path_ + ".lanes/stray").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  auto swept = sweep_arbiter(path_, {"c1"}, 0);
  ASSERT_TRUE(swept) << swept.error().message;
  EXPECT_FALSE(std::filesystem::exists(path_ + ".lanes/stray"));
  struct stat st {};
  ASSERT_EQ(::stat(lane.c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), sizeof(gpufrac_arbiter_lane));
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  EXPECT_TRUE(tampered().empty());
  swept = sweep_arbiter(path_, {}, 0);
  ASSERT_TRUE(swept && swept->removed);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".lanes"));
}

}  // namespace
