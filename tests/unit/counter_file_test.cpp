// The counter file of metrics/counter_file.hpp: exact counts after records, atomic adds from many
// processes at once, and the files it refuses to touch.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/fs.hpp"
#include "metrics/counter_file.hpp"
#include "small_tmpfs.hpp"

namespace gpufrac::metrics {
namespace {

class CounterFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-counters.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST(BucketOf, BoundsAreInclusive) {
  EXPECT_EQ(bucket_of(0), 0u);
  EXPECT_EQ(bucket_of(1000000), 0u);  // 1 ms: le="0.001"
  EXPECT_EQ(bucket_of(1000001), 1u);
  EXPECT_EQ(bucket_of(5000000000ULL), kLatencyBucketCount - 1);  // 5 s
  EXPECT_EQ(bucket_of(5000000001ULL), kLatencyBucketCount);      // +Inf only
}

TEST_F(CounterFileTest, MissingFileReadsAsZeroAndIsNotCreated) {
  auto s = read_counters(dir_);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(*s, CounterSnapshot{});
  EXPECT_FALSE(fs::exists(counter_file_path(dir_)));
}

TEST_F(CounterFileTest, RecordsExactly) {
  ASSERT_TRUE(record(dir_, {Timer::hook_create_runtime, 3000000, false, Refusal::other}));
  ASSERT_TRUE(record(dir_, {Timer::hook_create_runtime, 40000000, true, Refusal::capacity}));
  ASSERT_TRUE(record(dir_, {Timer::wrapper_create, 700000, true, Refusal::host_pid}));
  ASSERT_TRUE(record(dir_, {Timer::hook_poststop, 9000000000ULL, false, Refusal::other}));
  auto s = read_counters(dir_);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  const auto& create = s->latency[static_cast<std::size_t>(Timer::hook_create_runtime)];
  EXPECT_EQ(create.count(), 2u);
  EXPECT_EQ(create.sum_ns, 43000000u);
  EXPECT_EQ(create.buckets[2], 1u);  // 3 ms <= 5 ms
  EXPECT_EQ(create.buckets[5], 1u);  // 40 ms <= 50 ms
  EXPECT_EQ(s->latency[static_cast<std::size_t>(Timer::hook_poststop)].buckets[kLatencyBucketCount], 1u);
  EXPECT_EQ(s->latency[static_cast<std::size_t>(Timer::wrapper_create)].buckets[0], 1u);
  EXPECT_EQ(s->refusals[0][static_cast<std::size_t>(Refusal::capacity)], 1u);
  EXPECT_EQ(s->refusals[1][static_cast<std::size_t>(Refusal::host_pid)], 1u);
  EXPECT_EQ(s->refusals[0][static_cast<std::size_t>(Refusal::malformed)], 0u);
  EXPECT_EQ(std::filesystem::file_size(counter_file_path(dir_)), sizeof(CounterLayout));
  EXPECT_EQ(std::filesystem::status(counter_file_path(dir_)).permissions(), std::filesystem::perms(0644));
}

// Eight processes record 500 observations each at the same time: no add is lost.
TEST_F(CounterFileTest, ConcurrentProcessesLoseNothing) {
  constexpr int kProcs = 8, kEach = 500;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < kEach; ++i)
        if (!record(dir_, {Timer::hook_create_runtime, 2000000, i % 2 == 0, Refusal::malformed})) ::_exit(1);
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(k, &status, 0), k);
    EXPECT_EQ(status, 0);
  }
  auto s = read_counters(dir_);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  const auto& h = s->latency[static_cast<std::size_t>(Timer::hook_create_runtime)];
  EXPECT_EQ(h.count(), std::uint64_t{kProcs * kEach});
  EXPECT_EQ(h.buckets[1], std::uint64_t{kProcs * kEach});
  EXPECT_EQ(h.sum_ns, std::uint64_t{kProcs * kEach} * 2000000);
  EXPECT_EQ(s->refusals[0][static_cast<std::size_t>(Refusal::malformed)], std::uint64_t{kProcs * kEach / 2});
}

TEST_F(CounterFileTest, ForeignFilesAreLeftAlone) {
  const std::string path = counter_file_path(dir_);
  std::ofstream(path) << "not a counter file";
  auto r = record(dir_, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, path +
                                   ": 18 bytes; accepted: 520 (counter layout v1); it was written by another "
                                   "gpufrac version");
  EXPECT_EQ(std::filesystem::file_size(path), 18u);
  auto s = read_counters(dir_);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message, r.error().message);

  std::filesystem::resize_file(path, sizeof(CounterLayout));  // right size, bad magic
  auto bad = read_counters(dir_);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, path + ": not a gpufrac counter file (bad magic)");
  EXPECT_FALSE(record(dir_, {}).has_value());
}

TEST_F(CounterFileTest, SymlinkIsNotFollowed) {
  std::filesystem::create_symlink(dir_ + "/elsewhere", counter_file_path(dir_));
  auto r = record(dir_, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().err, ELOOP);
  EXPECT_FALSE(fs::exists(dir_ + "/elsewhere"));
}

// A full state directory (a small tmpfs): the file's page cannot be allocated, so it is not mapped;
// the writer gets an error (the hook logs it), not a SIGBUS, and a reader sees zeros.
TEST(CounterFileFull, AFullDirectoryIsAnErrorNotASignal) {
  testing::SmallTmpfs tmpfs;
  const std::string dir = tmpfs.mount(64 << 10);
  if (dir.empty()) GTEST_SKIP() << tmpfs.skip_reason();
  tmpfs.fill(0);
  const std::string path = counter_file_path(dir);
  auto r = record(dir, {Timer::hook_poststop, 1000, false, Refusal::other});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "cannot allocate the hole in " + path + " before mapping it: No space left on device");
  auto s = read_counters(dir);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(*s, CounterSnapshot{}) << "a file without storage reads as zeros";
  tmpfs.unfill();
  ASSERT_TRUE(record(dir, {Timer::hook_poststop, 1000, false, Refusal::other}).has_value());
  tmpfs.fill(0);
  ASSERT_TRUE(record(dir, {Timer::hook_poststop, 1000, false, Refusal::other}).has_value()) << "allocated once";
  EXPECT_EQ(read_counters(dir)->latency[static_cast<std::size_t>(Timer::hook_poststop)].count(), 2u);
}

}  // namespace
}  // namespace gpufrac::metrics
