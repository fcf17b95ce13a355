// run_as_nobody (hook/nobody_exec.hpp): what the program gets is checked from inside it, through
// /proc/self/status of a host program (the unit tests run as root, like the hook).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/fs.hpp"
#include "hook/nobody_exec.hpp"

namespace gpufrac::hook {
namespace {

std::string field(const std::string& status, const std::string& name) {
  const auto at = status.find("\n" + name + ":");
  if (at == std::string::npos) return "(missing)";
  const auto start = status.find_first_not_of(" \t", at + name.size() + 2);
  return status.substr(start, status.find('\n', start) - start);
}

TEST(NobodyExec, TheProgramRunsAsNobodyWithoutCapabilitiesFdsOrEnvironment) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, as the hook";
  fs::UniqueFd cat(::open("/bin/cat", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(cat);
  fs::UniqueFd held(::open("/dev/null", O_RDONLY));  // not CLOEXEC: the program must not get it
  ASSERT_TRUE(held);
  const char* const argv[] = {"cat", "/proc/self/status", "/proc/self/environ", nullptr};
  auto run = run_as_nobody(cat.get(), argv);
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_TRUE(WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0) << run->status << " " << run->output;
  const std::string& s = run->output;
  EXPECT_EQ(field(s, "Uid"), "65534\t65534\t65534\t65534");
  EXPECT_EQ(field(s, "Gid"), "65534\t65534\t65534\t65534");
  EXPECT_EQ(field(s, "Groups"), "");
  EXPECT_EQ(field(s, "CapEff"), "0000000000000000");
  EXPECT_EQ(field(s, "CapPrm"), "0000000000000000");
  EXPECT_EQ(field(s, "NoNewPrivs"), "1");
  EXPECT_EQ(field(s, "SigBlk"), "0000000000000000") << "the caller's mask is restored for the program";
  EXPECT_EQ(s.back(), '\n') << "an empty environment adds nothing after the status";
  const char* const ls_argv[] = {"ls", "/proc/self/fd", nullptr};
  fs::UniqueFd ls(::open("/bin/ls", O_RDONLY | O_CLOEXEC));
  auto fds = run_as_nobody(ls.get(), ls_argv);
  ASSERT_TRUE(fds) << fds.error().message;
  // stdin is closed, so ls's own directory fd is 0; then stdout and stderr, and nothing of the caller.
  EXPECT_EQ(fds->output, "0\n1\n2\n");
}

TEST(NobodyExec, AFailingProgramGivesItsStatusAndOutput) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, as the hook";
  fs::UniqueFd cat(::open("/bin/cat", O_RDONLY | O_CLOEXEC));
  const char* const argv[] = {"cat", "/nonexistent-gpufrac", nullptr};
  auto run = run_as_nobody(cat.get(), argv);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_TRUE(WIFEXITED(run->status) && WEXITSTATUS(run->status) == 1) << run->status;
  EXPECT_NE(run->output.find("No such file"), std::string::npos) << run->output;
  // A program that says more than the pipe holds still ends (its output is drained) and is cut.
  fs::UniqueFd yes(::open("/usr/bin/head", O_RDONLY | O_CLOEXEC));
  const char* const big[] = {"head", "-c", "1000000", "/dev/zero", nullptr};
  auto long_run = run_as_nobody(yes.get(), big);
  ASSERT_TRUE(long_run) << long_run.error().message;
  EXPECT_TRUE(WIFEXITED(long_run->status) && WEXITSTATUS(long_run->status) == 0) << long_run->status;
  EXPECT_EQ(long_run->output.size(), 4096u);
}

// A runtime may start the hook with stdout and stderr closed: the pipe then gets descriptors 1
// and 2 themselves, and the program must still write to it.
TEST(NobodyExec, OutputArrivesWhenTheCallersStdoutWasClosed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, as the hook";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(1);
    ::close(2);
    fs::UniqueFd cat(::open("/bin/cat", O_RDONLY | O_CLOEXEC));
    const char* const argv[] = {"cat", "/proc/self/status", nullptr};
    auto run = run_as_nobody(cat.get(), argv);
    ::_exit(run && WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0 && run->output.starts_with("Name:") ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace gpufrac::hook
