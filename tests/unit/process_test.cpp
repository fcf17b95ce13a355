#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "core/process.hpp"
#include "fake_proc.hpp"

namespace gpufrac {
namespace {

using testing::stat_line;
using testing::write_stat;

TEST(Process, ParsesStatWithHostileComm) {
  auto s = parse_proc_stat(stat_line(42, 'S', 987654321));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->start_time, 987654321u);
  auto t = parse_proc_stat("7 ()) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 555 9");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->start_time, 555u);
}

TEST(Process, RefusesDamagedStat) {
  EXPECT_EQ(parse_proc_stat("").error().message, "process stat: no (comm)");
  EXPECT_EQ(parse_proc_stat("1 (a) S 1 2").error().message, "process stat: only 5 fields");
  EXPECT_EQ(parse_proc_stat("1 (a)S 1").error().message, "process stat: no fields after comm");
  std::string bad = stat_line(1, 'S', 5);
  bad.replace(bad.find(" 5 1000"), 2, " x");
  EXPECT_EQ(parse_proc_stat(bad).error().message, "process stat: bad start time field");
}

TEST(Process, SelfIsAlive) {
  auto self = read_proc_stat("/proc", ::getpid());
  ASSERT_TRUE(self) << self.error().message;
  EXPECT_EQ(process_liveness("/proc", ::getpid(), self->start_time), Liveness::alive);
  EXPECT_EQ(process_liveness("/proc", ::getpid(), self->start_time + 1), Liveness::reused);
}

TEST(Process, ExitedChildIsExited) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  auto stat = read_proc_stat("/proc", child);
  ASSERT_TRUE(stat);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(process_liveness("/proc", child, stat->start_time), Liveness::exited);
  EXPECT_EQ(read_proc_stat("/proc", child).error().err, ENOENT);
}

TEST(Process, FixtureRootStates) {
  const std::string root = testing::temp_dir("proc");
  write_stat(root, 100, 'S', 5000);
  write_stat(root, 101, 'Z', 5000);
  EXPECT_EQ(process_liveness(root, 100, 5000), Liveness::alive);
  EXPECT_EQ(process_liveness(root, 100, 4999), Liveness::reused);
  EXPECT_EQ(process_liveness(root, 101, 5000), Liveness::exited);  // zombie: its memory is gone
  EXPECT_EQ(process_liveness(root, 102, 5000), Liveness::exited);
  ASSERT_TRUE(fs::write_file_atomic(root + "/103", "not a directory"));
  EXPECT_EQ(process_liveness(root, 103, 1), Liveness::unknown);  // ENOTDIR: never free on doubt
  EXPECT_EQ(std::string(to_string(Liveness::reused)), "pid reused");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace gpufrac
