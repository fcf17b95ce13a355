// Compute shares: the limit file's arbiter line, and the arbiter's two files on the host
// (limits/host/arbiter_file.hpp) with the checks that tell a tampered lease file
// (limits/host/arbiter_checks.hpp). The lease protocol: limits_lease_test.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gf_arbiter.h"
#include "limits/host/arbiter_checks.hpp"
#include "limits/host/arbiter_file.hpp"
#include "limits/host/limit_file.hpp"

namespace {

using namespace gpufrac;
using namespace gpufrac::limits;

constexpr const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";

TEST(LimitsFile, ArbiterLineFollowsTheComputeLine) {
  LimitFile f{"abc", "/run/gpufrac/usage", {{kGpu, 10, 250000, ComputeMode::fair, ComputePriority::normal, 0x1f}}};
  const std::string text = render_limit_file(f);
  EXPECT_EQ(text, std::string("version 1\ncontainer abc\nregion /run/gpufrac/usage\ndevice ") + kGpu + " 10\ncompute " +
                      kGpu + " 250000 fair normal\narbiter " + kGpu + " 000000000000001f\n");
  auto back = parse_limit_file(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, f);
}

TEST(LimitsFile, RefusesBadArbiterLines) {
  const std::string head = std::string("version 1\nregion /u\ndevice ") + kGpu + " 1\n";
  const std::string compute = std::string("compute ") + kGpu + " 5 fair normal\n";
  const std::string line = std::string("arbiter ") + kGpu + " ";
  const std::pair<std::string, std::string> cases[] = {
      {head + line + "00000000000000ff\n",
       "limit file: line 4: arbiter: no compute line for this UUID before it; accepted: compute <uuid> ... first"},
      {head + compute + line + "0000000000000000\n",
       "limit file: line 5: arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line"},
      {head + compute + line + "ff\n",
       "limit file: line 5: arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line"},
      {head + compute + line + "000000000000000g\n",
       "limit file: line 5: arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line"},
      {head + compute + line + "00000000000000ff x\n",
       "limit file: line 5: arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line"},
      {head + compute + line + "00000000000000ff\n" + line + "00000000000000fe\n",
       "limit file: line 6: arbiter: UUID listed twice"},
  };
  for (const auto& [text, message] : cases) {
    auto f = parse_limit_file(text);
    ASSERT_FALSE(f) << text;
    EXPECT_EQ(f.error().message, message) << text;
  }
}

class ArbiterFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-arbiter-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/compute/" + kGpu;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, path_;
};

TEST_F(ArbiterFileTest, CreatedFullyAllocatedAndKept) {
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  const std::pair<std::string, std::pair<std::size_t, unsigned>> files[] = {
      {path_, {sizeof(gpufrac_arbiter), 0666u}}, {path_ + ".slots", {sizeof(gpufrac_arbiter_slots), 0644u}}};
  for (const auto& [file, want] : files) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(static_cast<std::size_t>(st.st_size), want.first) << file;
    EXPECT_EQ(st.st_mode & 07777, want.second) << file << ": the slots file is the host's only";
    EXPECT_GE(static_cast<std::size_t>(st.st_blocks) * 512, want.first) << file << ": no hole";
  }
  ASSERT_TRUE(attach_arbiter_slot(path_, "c1", 300000, ComputeMode::fair, ComputePriority::normal));
  ASSERT_TRUE(ensure_arbiter(path_, kGpu)) << "a valid arbiter is kept";
  auto v = read_arbiter(path_);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->gpu_uuid, kGpu);
  EXPECT_TRUE(v->tampered.empty());
  ASSERT_EQ(v->slots.size(), 1u);
  EXPECT_EQ(v->slots[0].key, "c1");
}

TEST_F(ArbiterFileTest, AnInvalidSlotsFileIsReplaced) {
  std::filesystem::create_directories(dir_ + "/compute");
  ASSERT_EQ(::close(::open((path_ + ".slots").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  auto bad = read_arbiter(path_);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "compute arbiter " + path_ + ".slots: 0 bytes; accepted: a regular file of " +
                                     std::to_string(sizeof(gpufrac_arbiter_slots)) + " bytes (arbiter version 3)");
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  EXPECT_TRUE(read_arbiter(path_));
}

// Version 2 split the arbiter into two files: a version-1 file (a container started before the
// upgrade meeting a new one, or the reverse) is refused in one line, and its launches not arbitrated.
TEST_F(ArbiterFileTest, AnotherLayoutVersionIsRefused) {
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  {
    int fd = ::open(path_.c_str(), O_WRONLY);
    const std::uint32_t v1 = 1;
    ASSERT_EQ(::pwrite(fd, &v1, sizeof v1, offsetof(gpufrac_arbiter, version)), static_cast<ssize_t>(sizeof v1));
    ::close(fd);
  }
  gf_arb m{};
  char err[512];
  ASSERT_EQ(gf_arbiter_map(path_.c_str(), (path_ + ".slots").c_str(), &m, err, sizeof err), -1);
  EXPECT_EQ(std::string(err), path_ + ": arbiter version 1; accepted: 3");
  ASSERT_EQ(gf_arbiter_map((path_ + ".slots").c_str(), path_.c_str(), &m, err, sizeof err), -1);
  EXPECT_EQ(std::string(err), path_ + ": not a file of 49408 bytes") << "the lease file is not a slots file";
}

// A tenant that overwrites the lease file's header: the GPU's containers keep one arbiter (repaired in
// place at the next booking), status says it was tampered with, and slots are freed all the same.
TEST_F(ArbiterFileTest, AnOverwrittenLeaseFileIsToldAndRepairedInPlace) {
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  ASSERT_TRUE(attach_arbiter_slot(path_, "c1", 300000, ComputeMode::fair, ComputePriority::normal));
  struct stat before {};
  ASSERT_EQ(::stat(path_.c_str(), &before), 0);
  {
    int fd = ::open(path_.c_str(), O_WRONLY);
    const char junk[16] = "0123456789abcde";
    ASSERT_EQ(::pwrite(fd, junk, sizeof junk, 0), static_cast<ssize_t>(sizeof junk));
    ::close(fd);
  }
  auto v = read_arbiter(path_);
  ASSERT_TRUE(v) << "the slots file is intact";
  ASSERT_EQ(v->tampered.size(), 1u);
  EXPECT_EQ(v->tampered[0],
            "its lease file's header: wrong magic 0x33323130; accepted: 0x42524147 (gpufrac compute arbiter)");
  EXPECT_EQ(v->slots[0].window_ns, 0u) << "no figures from a tampered lease file";
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  struct stat after {};
  ASSERT_EQ(::stat(path_.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "repaired in place";
  auto repaired = read_arbiter(path_);
  ASSERT_EQ(repaired->tampered.size(), 1u);
  EXPECT_EQ(repaired->tampered[0], "the host repaired its lease file's header 0 s ago (a container changed it)");
  ASSERT_EQ(::truncate(path_.c_str(), 10), 0);
  EXPECT_EQ(*release_arbiter_slots(path_, "c1"), 1u) << "a slot is freed whatever the lease file holds";
}

TEST_F(ArbiterFileTest, SlotsBySetupAndRelease) {
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  auto t1 = attach_arbiter_slot(path_, "c1", 300000, ComputeMode::strict, ComputePriority::high);
  auto t2 = attach_arbiter_slot(path_, "c2", 700000, ComputeMode::fair, ComputePriority::normal);
  ASSERT_TRUE(t1 && t2);
  EXPECT_NE(*t1, 0u);
  EXPECT_NE(*t1, *t2);
  auto again = attach_arbiter_slot(path_, "c1", 400000, ComputeMode::fair, ComputePriority::normal);
  ASSERT_TRUE(again);
  auto v = read_arbiter(path_);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->slots.size(), 2u) << "the same key keeps its slot";
  EXPECT_EQ(v->slots[0].weight_ppm, 400000u);
  EXPECT_EQ(v->slots[1].mode, ComputeMode::fair);
  EXPECT_EQ(*release_arbiter_slots(path_, "c1"), 1u);
  EXPECT_EQ(*release_arbiter_slots(path_, "c1"), 0u) << "idempotent";
  EXPECT_EQ(read_arbiter(path_)->slots.size(), 1u);
  EXPECT_EQ(*release_arbiter_slots(dir_ + "/compute/none", "c2"), 0u) << "no arbiter: nothing to free";
  auto swept = sweep_arbiter(path_, {}, 3600);
  ASSERT_TRUE(swept);
  EXPECT_TRUE(swept->freed.empty()) << "young slots stay";
  swept = sweep_arbiter(path_, {"c2"}, 0);
  EXPECT_TRUE(swept->freed.empty()) << "booked slots stay";
  EXPECT_FALSE(swept->removed);
  swept = sweep_arbiter(path_, {}, 0);
  EXPECT_EQ(swept->freed, std::vector<std::string>{"c2"});
  EXPECT_TRUE(swept->removed) << "no share left on the GPU: its arbiter goes";
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".slots"));
}

TEST_F(ArbiterFileTest, EverySlotTaken) {
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  for (int i = 0; i < GPUFRAC_ARBITER_SLOTS; i++)
    ASSERT_TRUE(attach_arbiter_slot(path_, "c" + std::to_string(i), 1000, ComputeMode::fair, ComputePriority::normal));
  auto full = attach_arbiter_slot(path_, "one-more", 1000, ComputeMode::fair, ComputePriority::normal);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().message, "compute arbiter " + path_ +
                                      ": all 256 container slots of this GPU are taken; accepted: at most 256 "
                                      "containers with a compute share per GPU");
}

// The host's checks of a lease file against its slots file: what no shim following the protocol writes.
class LeaseFileChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    gpufrac_arbiter_params p;
    gf_arbiter_default_params(&p);
    gf_arbiter_slots_format(&slots_, kGpu, &p);
    gf_arbiter_format(&lease_);
    gf_arb m{&lease_, &slots_};
    m.table = lanes_;  // the lane files, as the host reads them
    ASSERT_EQ(gf_arbiter_setup(&m, "normal", 1, 500000, 0, 1), 0);
    ASSERT_EQ(gf_arbiter_setup(&m, "high", 2, 500000, GPUFRAC_ARBITER_HIGH, 1), 1);
  }
  std::vector<std::string> problems() { return lease_file_problems(slots_, lease_, lanes_, now_); }
  std::uint32_t now_ms() const { return static_cast<std::uint32_t>(now_ / 1000000); }
  const std::uint64_t now_ = 5000ull * 1000000000ull;
  gpufrac_arbiter_slots slots_{};
  gpufrac_arbiter lease_{};
  gpufrac_arbiter_lane lanes_[GPUFRAC_ARBITER_SLOTS]{};
};

TEST_F(LeaseFileChecks, ASaneFileHasNone) {
  lease_.lease = gpufrac_lease_word(1, 1, 7, now_ms() + 20);
  lease_.preempt = 2;
  lease_.busy = 8;
  lease_.busy_until_ns = now_ + 280'000'000;
  gf_arbiter_charge(&lanes_[0], 900'000'000, now_ - 1'000'000'000, 500000, 0);
  EXPECT_EQ(problems(), std::vector<std::string>{});
}

TEST_F(LeaseFileChecks, EachForgeryIsNamed) {
  lease_.lease = gpufrac_lease_word(9, 1, 7, now_ms() + 20);
  EXPECT_EQ(problems(), std::vector<std::string>{"the lease names slot 8, which was never set up"});
  lease_.lease = gpufrac_lease_word(1, 1, 7, now_ms() + 5000);
  EXPECT_EQ(problems(), std::vector<std::string>{"the lease's deadline is 5000 ms ahead (a holder sets at most 20)"});
  lease_.lease = gpufrac_lease_word(1, 1, 7, now_ms() + 20);
  lease_.preempt = 1;
  EXPECT_EQ(problems(), std::vector<std::string>{"a preemption request by slot 0, which is not high priority"});
  lease_.preempt = 0;
  lease_.busy = 8;
  lease_.busy_until_ns = now_ + 60'000'000'000ull;
  EXPECT_EQ(problems(), std::vector<std::string>{"the holder says it is busy for 60000 ms more (at most 280)"});
  lease_.busy = 0;
  gf_arbiter_charge(&lanes_[1], 1'900'000'000, now_ - 1'000'000'000, 500000, 0);
  gf_arbiter_charge(&lanes_[1], 1'900'000'000, now_ - 1'000'000'000, 500000, 0);
  EXPECT_EQ(problems(), std::vector<std::string>{"slot 1 was charged 3800 ms in one second"});
  std::memset(lanes_[1].history, 0, sizeof lanes_[1].history);
  EXPECT_EQ(problems(), std::vector<std::string>{});
  lease_.vclock = 16'000'000;  // slot 0, runnable, set its vtime back 8 s of its time (issue 43 item 1)
  lanes_[0].vtime = 0;
  lanes_[1].vtime = lease_.vclock;
  lanes_[0].seen_ns = now_ - 1'000'000;
  EXPECT_EQ(problems(),
            std::vector<std::string>{"slot 0 (normal)'s lane is 8000 ms of its time behind the queue (at most 1300)"});
  lanes_[0].vtime = lease_.vclock;  // and pushed slot 1 far ahead
  lanes_[1].vtime = lease_.vclock + 120'000'000;
  EXPECT_EQ(problems(), std::vector<std::string>{
                            "slot 1 (high)'s lane is 60000 ms of its time ahead of the queue (at most 10000)"});
  lanes_[1].vtime = lease_.vclock;
  lanes_[1].seen_ns = now_ + 5'000'000'000ull;
  EXPECT_EQ(problems(),
            std::vector<std::string>{"slot 1 (high)'s lane says it waited or claimed 5000 ms in the future"});
  lanes_[1].seen_ns = 0;
  lanes_[1].suspect[0] = {1, GF_LIE_BACK, static_cast<std::uint64_t>(std::time(nullptr))};  // slot 1's view saw it
  EXPECT_EQ(problems(),
            std::vector<std::string>{"slot 1 (high) saw slot 0 (normal)'s lane move back (in the last 10 minutes)"});
  lanes_[1].suspect[0].seen_at_s -= 601;
  EXPECT_EQ(problems(), std::vector<std::string>{}) << "older than 10 minutes";
  lease_.magic = 0;
  EXPECT_EQ(problems(), std::vector<std::string>{
                            "its lease file's header: wrong magic 0x00000000; accepted: 0x42524147 (gpufrac compute "
                            "arbiter)"});
}

}  // namespace
