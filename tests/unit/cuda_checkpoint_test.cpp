// nvml/cuda_checkpoint.hpp against the fake libcuda.so.1 (tests/fakes/cuda/README.md "Checkpoint"):
// a swap_target child (tests/e2e/swap) whose bytes survive lock, checkpoint, restore and unlock,
// and the one-line errors of wrong transitions, a lock timeout, a pid without CUDA, a driver
// without the checkpoint API and a missing library.
#include "nvml/cuda_checkpoint.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace gpufrac::nvml {
namespace {

using std::chrono::milliseconds;

// A swap_target child with 2 blocks of 64 KiB, driven through its stdin and stdout.
class Target {
 public:
  Target() {
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0), ::dup2(out[1], 1);
      ::execl(GPUFRAC_SWAP_TARGET, "swap_target", "2", "65536", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]), ::close(out[1]);
    to_ = ::fdopen(in[1], "w");
    from_ = ::fdopen(out[0], "r");
    ready_ = line().rfind("ready ", 0) == 0;
  }
  ~Target() {
    if (pid_ > 0) ::kill(pid_, SIGKILL), ::waitpid(pid_, nullptr, 0);
    if (to_) std::fclose(to_);
    if (from_) std::fclose(from_);
  }
  bool ready() const { return ready_; }
  int pid() const { return pid_; }
  std::string say(const std::string& command) {
    std::fprintf(to_, "%s\n", command.c_str());
    std::fflush(to_);
    return line();
  }

 private:
  std::string line() {
    char buf[512];
    if (!from_ || !std::fgets(buf, sizeof buf, from_)) return "";
    std::string s = buf;
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  bool ready_ = false;
};

class CudaCheckpointTest : public ::testing::Test {
 protected:
  // The pages of the fake's checkpoint channel live beside the fake NVML state (one per run).
  static void SetUpTestSuite() {
    ASSERT_NE(::mkdtemp(dir_), nullptr);
    ::setenv("GPUFRAC_FAKE_NVML_STATE", (std::string(dir_) + "/nvml.json").c_str(), 1);
    ::setenv("GPUFRAC_FAKE_CUDA_COST", "0", 1);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static inline char dir_[] = "/tmp/gpufrac-ckpt-test.XXXXXX";
  static CheckpointDriver driver() {
    auto d = CheckpointDriver::open(GPUFRAC_FAKE_CUDA);
    EXPECT_TRUE(d.has_value()) << d.error().message;
    return std::move(*d);
  }
};

TEST_F(CudaCheckpointTest, EveryByteSurvivesTheCycle) {
  Target t;
  ASSERT_TRUE(t.ready());
  auto d = driver();
  EXPECT_EQ(d.state(t.pid()).value(), ProcessState::running);
  ASSERT_TRUE(d.lock(t.pid(), milliseconds(0)).has_value());
  EXPECT_EQ(d.state(t.pid()).value(), ProcessState::locked);
  ASSERT_TRUE(d.checkpoint(t.pid()).has_value());
  EXPECT_EQ(d.state(t.pid()).value(), ProcessState::checkpointed);
  ASSERT_TRUE(d.restore(t.pid()).has_value());
  EXPECT_EQ(d.state(t.pid()).value(), ProcessState::locked);
  ASSERT_TRUE(d.unlock(t.pid()).has_value());
  EXPECT_EQ(t.say("check"), "ok 131072");
  auto tid = d.restore_thread(t.pid());
  ASSERT_TRUE(tid.has_value());
  EXPECT_EQ(::access(("/proc/" + std::to_string(t.pid()) + "/task/" + std::to_string(*tid)).c_str(), F_OK), 0);
}

TEST_F(CudaCheckpointTest, AWrongTransitionNamesTheStateItNeeds) {
  Target t;
  ASSERT_TRUE(t.ready());
  auto d = driver();
  auto r = d.unlock(t.pid());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "cuCheckpointProcessUnlock(pid " + std::to_string(t.pid()) +
                                   "): CUDA_ERROR_ILLEGAL_STATE (the operation is not permitted in the current "
                                   "state); it needs a LOCKED process, this one is RUNNING");
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  ASSERT_TRUE(d.lock(t.pid(), milliseconds(0)).has_value());
  ASSERT_TRUE(d.checkpoint(t.pid()).has_value());
  r = d.lock(t.pid(), milliseconds(0));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("it needs a RUNNING process, this one is CHECKPOINTED"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(d.state(t.pid()).value(), ProcessState::checkpointed);
}

TEST_F(CudaCheckpointTest, ALockTheWorkOutlastsLeavesTheProcessRunning) {
  Target t;
  ASSERT_TRUE(t.ready());
  ASSERT_EQ(t.say("busy 600000"), "launched");
  auto d = driver();
  auto r = d.lock(t.pid(), milliseconds(100));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "cuCheckpointProcessLock(pid " + std::to_string(t.pid()) +
                                   "): CUDA_ERROR_TIMEOUT (the wait operation has timed out); its submitted work "
                                   "outlasted the lock's timeout: it stays RUNNING");
  EXPECT_EQ(d.state(t.pid()).value(), ProcessState::running);
}

TEST_F(CudaCheckpointTest, APidWithoutCudaIsOneLine) {
  auto d = driver();
  const int pid = static_cast<int>(::getppid());
  auto s = d.state(pid);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message, "pid " + std::to_string(pid) + ": the process has no CUDA state");
  auto r = d.lock(pid, milliseconds(0));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("CUDA_ERROR_NOT_INITIALIZED"), std::string::npos) << r.error().message;
}

TEST_F(CudaCheckpointTest, ADriverWithoutTheApiSaysWhichDriverItNeeds) {
  auto d = CheckpointDriver::open(GPUFRAC_OLD_CUDA);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().message, std::string("CUDA driver library ") + GPUFRAC_OLD_CUDA +
                                   " has no checkpoint API (cuCheckpointProcessLock and the rest); swap needs "
                                   "driver r570 / CUDA 12.8 or newer");
  EXPECT_EQ(d.error().kind, ErrorKind::user);
}

TEST_F(CudaCheckpointTest, AMissingLibraryIsOneLine) {
  auto d = CheckpointDriver::open("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().message.rfind("CUDA driver library /nonexistent/libcuda.so.1 could not be loaded: ", 0), 0u)
      << d.error().message;
  EXPECT_EQ(d.error().message.find('\n'), std::string::npos);
}

TEST(CudaCheckpointNames, StatesAreTheDriversNames) {
  EXPECT_EQ(state_name(ProcessState::running), "RUNNING");
  EXPECT_EQ(state_name(ProcessState::locked), "LOCKED");
  EXPECT_EQ(state_name(ProcessState::checkpointed), "CHECKPOINTED");
  EXPECT_EQ(state_name(ProcessState::failed), "FAILED");
}

}  // namespace
}  // namespace gpufrac::nvml
