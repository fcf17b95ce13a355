// spawn_mps_daemon (nvml/mps_daemon.hpp): what the MPS control daemon gpufrac starts inherits from
// its starter. Nothing but stdin (/dev/null) and stdout and stderr (its log directory's control.log):
// a lock or a pipe of the hook, the provisioner or a test harness must never live on in a daemon.
// Which process it is comes from the kernel, never from the pid file alone (a pid file naming a
// process the start did not make is not taken), and its pipe and shm directories are fresh tmpfs
// at each start. Run as root (the daemon gets a mount namespace of its own, as from the hook).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
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
#include "core/process.hpp"
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
    if (!dir_.empty()) (void)remove_mps_files(cfg_, kGpu);  // the tmpfs, before the directory goes
  }
  // A stand-in control program: `body` (sh) runs, then a `sleep` it leaves behind plays the daemon
  // and its pid goes to <dir>/daemon.pid.
  std::string stand_in(const std::string& body) {
    const std::string control = dir_ + "/nvidia-cuda-mps-control";
    EXPECT_TRUE(fs::write_file_atomic(control,
                                      "#!/bin/sh\n" + body +
                                          "sleep 30 </dev/null >/dev/null 2>&1 &\n"
                                          "echo $! >" +
                                          dir_ + "/daemon.pid\n" + after_ + "\n",
                                      0755));
    return control;
  }
  std::int64_t stand_in_daemon() {
    auto text = fs::read_file(dir_ + "/daemon.pid", 64);
    return text ? std::stoll(*text) : 0;
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
  std::string after_ = "echo $! >\"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid\"";
  fs::UniqueFd held_fd_;
  Config cfg_;
  std::vector<std::int64_t> started_;
};

// A stand-in control program that shows what it was given: the targets of its fds 0-2 and the fds
// a program it runs has (ls: its own directory fd is 3), on its stdout; then the pid file.
TEST_F(MpsDaemonSpawn, TheDaemonGetsDevNullItsControlLogAndNothingElse) {
  const std::string control = stand_in(
      "readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2\n"
      "ls /proc/self/fd\n");
  auto spawned = spawn_mps_daemon(cfg_, control, kGpu);
  ASSERT_TRUE(spawned) << spawned.error().message;
  started_.push_back(spawned->pid);
  const std::string log = mps_log_dir(cfg_, kGpu) + "/control.log";
  auto text = fs::read_file(log, 4096);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, text::cat("/dev/null\n", log, "\n", log, "\n0\n1\n2\n3\n"));
}

// The pid file names another live process (this test's, as a tenant writes a host pid there) until
// the daemon's own pid replaces it: only the daemon's is taken, with its start time.
TEST_F(MpsDaemonSpawn, APidFileNamingAnotherProcessIsNotTaken) {
  after_ = text::cat("echo ", ::getpid(), " >\"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid\"\n",
                     "D=$!; (sleep 0.3; echo $D >\"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid\") &");
  auto spawned = spawn_mps_daemon(cfg_, stand_in(""), kGpu);
  ASSERT_TRUE(spawned) << spawned.error().message;
  started_.push_back(spawned->pid);
  EXPECT_EQ(spawned->pid, stand_in_daemon());
  EXPECT_NE(spawned->pid, ::getpid());
  auto stat = read_proc_stat("/proc", spawned->pid);
  ASSERT_TRUE(stat);
  EXPECT_EQ(spawned->start_time, stat->start_time);
}

// Only ever another process's pid: no daemon is taken, and the start fails in one line.
TEST_F(MpsDaemonSpawn, NoPidOfItsOwnIsAFailedStart) {
  after_ = text::cat("echo ", ::getpid(), " >\"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid\"");
  auto spawned = spawn_mps_daemon(cfg_, stand_in(""), kGpu);
  started_.push_back(stand_in_daemon());
  ASSERT_FALSE(spawned);
  EXPECT_NE(spawned.error().message.find("no daemon of its own wrote its pid to its pipe directory in 10 s"),
            std::string::npos)
      << spawned.error().message;
}

// Each start gets fresh pipe and shm tmpfs: what was written in the last start's is gone, and the
// shm tmpfs has its stated size (1 GiB).
TEST_F(MpsDaemonSpawn, EachStartGetsFreshTmpfs) {
  const std::string control = stand_in("");
  auto first = spawn_mps_daemon(cfg_, control, kGpu);
  ASSERT_TRUE(first) << first.error().message;
  started_.push_back(first->pid);
  const std::string pipe = mps_pipe_dir(cfg_, kGpu), shm = mps_shm_dir(cfg_, kGpu);
  ASSERT_EQ(::symlink("/etc/passwd", (pipe + "/planted").c_str()), 0);
  ASSERT_TRUE(fs::write_file_atomic(shm + "/planted", "x", 0644));
  auto second = spawn_mps_daemon(cfg_, control, kGpu);
  ASSERT_TRUE(second) << second.error().message;
  started_.push_back(second->pid);
  EXPECT_FALSE(fs::exists(pipe + "/planted"));
  EXPECT_FALSE(fs::exists(shm + "/planted"));
  for (const auto& dir : {pipe, shm}) {
    struct statfs st {};
    ASSERT_EQ(::statfs(dir.c_str(), &st), 0);
    EXPECT_EQ(st.f_type, 0x01021994) << dir << " is not a tmpfs";  // TMPFS_MAGIC
    if (dir == shm) EXPECT_EQ(st.f_blocks * st.f_bsize, 1u << 30);
  }
  ASSERT_TRUE(remove_mps_files(cfg_, kGpu));
  EXPECT_FALSE(fs::exists(mps_dir(cfg_, kGpu)));
}

// The simulated driver's daemon itself: while it runs, none of its fds is the caller's file.
TEST_F(MpsDaemonSpawn, TheFakeDaemonHoldsNoFdOfItsStarter) {
  const std::string control = std::string(GPUFRAC_DRIVER_KIT) + "/bin/nvidia-cuda-mps-control";
  auto spawned = spawn_mps_daemon(cfg_, control, kGpu);
  ASSERT_TRUE(spawned) << spawned.error().message;
  const std::int64_t* pid = &spawned->pid;
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
