// spawn_mps_daemon (nvml/mps_daemon.hpp): what the MPS control daemon gpufrac starts inherits from
// its starter. Nothing but stdin (/dev/null) and stdout and stderr (its log directory's control.log):
// a lock or a pipe of the hook, the provisioner or a test harness must never live on in a daemon.
// Run as root (the daemon gets a mount namespace of its own, as from the hook).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/config/config.hpp"
#include "core/fs.hpp"
#include "core/plan/plan_mps.hpp"
#include "core/text.hpp"
#include "nvml/mps_daemon.hpp"
#include "scratch_dir.hpp"

namespace gpufrac {
namespace {

constexpr const char* kGpu = "GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5";

class MpsDaemonSpawn : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, as the hook (a mount namespace for the daemon)";
    dir_ = test::scratch_dir("gpufrac-mps-spawn");
    auto cfg = load_config_string(text::cat("state-dir: ", dir_, "/state\n"), "test.yaml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    cfg_ = *cfg;
    // What a caller holds while it starts a daemon: an open file and a lock, neither close-on-exec
    // (as /tmp/gpufrac-daemons.lock reaches a test through `flock ... ctest`).
    held_ = dir_ + "/held.lock";
    held_fd_ = fs::UniqueFd(::open(held_.c_str(), O_RDWR | O_CREAT, 0600));
    ASSERT_TRUE(held_fd_);
    ASSERT_EQ(::flock(held_fd_.get(), LOCK_EX), 0);
  }
  void TearDown() override {
    for (auto pid : started_)
      if (alive(pid)) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
  static bool alive(std::int64_t pid) {
    auto stat = fs::read_file(text::cat("/proc/", pid, "/stat"), 4096);
    if (!stat) return false;
    const auto end = stat->rfind(')');
    return end != std::string::npos && stat->size() > end + 2 && (*stat)[end + 2] != 'Z';
  }
  // What each of the process's fds refers to, "<fd> <target>" in fd order.
  static std::vector<std::string> fds_of(std::int64_t pid) {
    std::vector<std::pair<int, std::string>> all;
    for (const auto& e : std::filesystem::directory_iterator(text::cat("/proc/", pid, "/fd"))) {
      std::error_code ec;
      all.emplace_back(std::stoi(e.path().filename().string()), std::filesystem::read_symlink(e.path(), ec).string());
    }
    std::sort(all.begin(), all.end());
    std::vector<std::string> out;
    for (const auto& [fd, target] : all) out.push_back(text::cat(fd, " ", target));
    return out;
  }
  std::string dir_, held_;
  fs::UniqueFd held_fd_;
  Config cfg_;
  std::vector<std::int64_t> started_;
};

// A stand-in control program that shows what it was given: the targets of its fds 0-2 and the fds
// a program it runs has (ls: its own directory fd is 3), on its stdout; then the pid file.
TEST_F(MpsDaemonSpawn, TheDaemonGetsDevNullItsControlLogAndNothingElse) {
  const std::string control = dir_ + "/nvidia-cuda-mps-control";
  ASSERT_TRUE(fs::write_file_atomic(control,
                                    "#!/bin/sh\n"
                                    "readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2\n"
                                    "ls /proc/self/fd\n"
                                    "echo $$ >\"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid\"\n",
                                    0755));
  auto pid = spawn_mps_daemon(cfg_, control, kGpu);
  ASSERT_TRUE(pid) << pid.error().message;
  const std::string log = mps_log_dir(cfg_, kGpu) + "/control.log";
  auto text = fs::read_file(log, 4096);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, text::cat("/dev/null\n", log, "\n", log, "\n0\n1\n2\n3\n"));
}

// The simulated driver's daemon itself: while it runs, none of its fds is the caller's file.
TEST_F(MpsDaemonSpawn, TheFakeDaemonHoldsNoFdOfItsStarter) {
  const std::string control = std::string(GPUFRAC_DRIVER_KIT) + "/bin/nvidia-cuda-mps-control";
  auto pid = spawn_mps_daemon(cfg_, control, kGpu);
  ASSERT_TRUE(pid) << pid.error().message;
  started_.push_back(*pid);
  ASSERT_TRUE(alive(*pid));
  for (const auto& fd : fds_of(*pid)) EXPECT_EQ(fd.find(held_), std::string::npos) << fd;
  EXPECT_EQ(fds_of(*pid).front(), "0 /dev/null");
  // Told to quit through its pipe directory, it goes.
  auto quit = mps_command(cfg_, control, kGpu, "quit\n");
  ASSERT_TRUE(quit) << quit.error().message;
  for (int i = 0; i < 500 && alive(*pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(alive(*pid)) << "the daemon " << *pid << " still runs after quit";
}

}  // namespace
}  // namespace gpufrac
