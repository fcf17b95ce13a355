// Applies Edits inside a real mount namespace (needs root): a child process unshares its mount
// namespace and waits; the hook's applier mounts into it; the test looks through /proc/<pid>/root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hook/ns_apply.hpp"
#include "hook/privileges.hpp"

namespace gpufrac::hook {
namespace {

namespace stdfs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class NsApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    char tmpl[] = "/tmp/gpufrac-ns-XXXXXX";
    base_ = ::mkdtemp(tmpl);
    rootfs_ = base_ + "/rootfs";
    stdfs::create_directories(rootfs_ + "/etc");
    stdfs::create_directories(base_ + "/host/dev");
    std::ofstream(base_ + "/host/limits") << "version 1\n";
    std::ofstream(base_ + "/host/usage") << "";
    std::ofstream(base_ + "/host/preload") << "/run/gpufrac/libgpufrac-limits.so\n";
    ASSERT_EQ(::mknod((base_ + "/host/dev/nvidia0").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
    child_ = ::fork();
    if (child_ == 0) {
      if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(3);
      ::pause();
      ::_exit(0);
    }
    ::usleep(100000);
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    if (!base_.empty()) stdfs::remove_all(base_);
  }
  std::string in_ns(const std::string& container_path) {
    return "/proc/" + std::to_string(child_) + "/root" + rootfs_ + container_path;
  }
  Edits edits() {
    Edits e;
    e.mounts = {{"tmpfs", "/run/gpufrac", "tmpfs", {"nosuid", "nodev", "noexec", "size=1m", "mode=755"}},
                {base_ + "/host/limits", "/run/gpufrac/limits", "bind", {"ro", "nosuid", "nodev", "bind"}},
                {base_ + "/host/usage", "/run/gpufrac/usage", "bind", {"nosuid", "nodev", "bind"}},
                {base_ + "/host/preload", "/etc/ld.so.preload", "bind", {"ro", "nosuid", "nodev", "bind"}}};
    e.device_nodes = {{"/dev/nvidia0", base_ + "/host/dev/nvidia0", 'c', 1, 3}};
    return e;
  }
  std::string base_, rootfs_;
  pid_t child_ = -1;
};

TEST_F(NsApplyTest, MountsLandInTheContainerOnly) {
  auto prepared = prepare_mounts(edits());
  ASSERT_TRUE(prepared) << prepared.error().message;
  auto r = attach_in_namespace({"/proc/" + std::to_string(child_) + "/ns/mnt", rootfs_}, *prepared);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(slurp(in_ns("/run/gpufrac/limits")), "version 1\n");
  EXPECT_EQ(slurp(in_ns("/etc/ld.so.preload")), "/run/gpufrac/libgpufrac-limits.so\n");
  // ro: the container cannot raise its limit; rw: usage is shared with the host.
  EXPECT_LT(::open(in_ns("/run/gpufrac/limits").c_str(), O_WRONLY), 0);
  EXPECT_EQ(errno, EROFS);
  { std::ofstream(in_ns("/run/gpufrac/usage")) << "counted"; }
  EXPECT_EQ(slurp(base_ + "/host/usage"), "counted");
  struct stat st {};
  ASSERT_EQ(::stat(in_ns("/dev/nvidia0").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  // The host side of the rootfs only got empty mount points, never the mounted content.
  EXPECT_TRUE(stdfs::is_empty(rootfs_ + "/run/gpufrac"));
  EXPECT_EQ(stdfs::file_size(rootfs_ + "/etc/ld.so.preload"), 0u);
}

TEST_F(NsApplyTest, SymlinkedTargetIsRefusedAndNothingMounted) {
  stdfs::remove_all(rootfs_ + "/etc");
  stdfs::create_symlink(base_ + "/host", rootfs_ + "/etc");
  auto prepared = prepare_mounts(edits());
  ASSERT_TRUE(prepared);
  auto r = attach_in_namespace({"/proc/" + std::to_string(child_) + "/ns/mnt", rootfs_}, *prepared);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/etc/ld.so.preload"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  EXPECT_FALSE(stdfs::exists(base_ + "/host/ld.so.preload"));
  EXPECT_EQ(slurp(base_ + "/host/preload"), "/run/gpufrac/libgpufrac-limits.so\n");
}

TEST_F(NsApplyTest, WrongDeviceNumbersAreRefused) {
  Edits e = edits();
  e.device_nodes[0].minor = 4;
  auto prepared = prepare_mounts(e);
  ASSERT_FALSE(prepared);
  EXPECT_NE(prepared.error().message.find("is not the character device 1:4"), std::string::npos);
}

// The last step of an attach: a container path that does not show its mount's source (a directory
// exchanged into the rootfs during the hook) fails the hook instead of starting the container.
TEST_F(NsApplyTest, VerifyRefusesAPathThatDoesNotShowItsSource) {
  stdfs::create_directories(rootfs_ + "/run/gpufrac");
  std::ofstream(rootfs_ + "/run/gpufrac/limits") << "image's own\n";
  fs::UniqueFd root(::open(rootfs_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root);
  std::vector<PreparedMount> same;
  same.push_back({fs::UniqueFd(::open((rootfs_ + "/run/gpufrac/limits").c_str(), O_PATH | O_CLOEXEC)),
                  "/run/gpufrac/limits", TargetKind::file});
  EXPECT_TRUE(verify_mounts(root.get(), same));  // the path shows the source's inode
  std::vector<PreparedMount> swapped;
  swapped.push_back({fs::UniqueFd(::open((base_ + "/host/limits").c_str(), O_PATH | O_CLOEXEC)), "/run/gpufrac/limits",
                     TargetKind::file});
  auto r = verify_mounts(root.get(), swapped);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "container path \"/run/gpufrac/limits\" does not show what gpufrac mounted there (the root changed "
            "during the hook?); the container is not started");
  std::vector<PreparedMount> missing;
  missing.push_back({fs::UniqueFd(::open((base_ + "/host/usage").c_str(), O_PATH | O_CLOEXEC)), "/run/gpufrac/usage",
                     TargetKind::file});
  EXPECT_FALSE(verify_mounts(root.get(), missing));  // nothing there at all
}

TEST(Seccomp, RootfsPhaseForbidsOtherSyscalls) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  pid_t child = ::fork();
  if (child == 0) {
    if (!install_rootfs_seccomp()) ::_exit(10);
    if (::unlink("/tmp/gpufrac-seccomp-probe") == 0 || errno != EPERM) ::_exit(11);
    if (::mkdirat(AT_FDCWD, "/tmp/gpufrac-seccomp-probe", 0700) != 0 && errno != EEXIST) ::_exit(12);
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execve("/bin/true", argv, nullptr);
    ::_exit(errno == EPERM ? 0 : 13);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ::rmdir("/tmp/gpufrac-seccomp-probe");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace gpufrac::hook

namespace gpufrac::hook {
namespace {

bool effective(cap_value_t c) {
  cap_t caps = cap_get_proc();
  cap_flag_value_t v = CAP_CLEAR;
  cap_get_flag(caps, c, CAP_EFFECTIVE, &v);
  cap_free(caps);
  return v == CAP_SET;
}

// CapBnd of /proc/self/status.
std::uint64_t bounding_set() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("CapBnd:")) return std::stoull(line.substr(7), nullptr, 16);
  return ~0ull;
}

TEST(Capabilities, BookingPhaseLowersAndApplyPhaseRaises) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  pid_t child = ::fork();
  if (child == 0) {
    if (!restrict_bounding_set() || !set_effective(kBookingCapabilities)) ::_exit(10);
    std::uint64_t hook_set = 0;  // the bounding set is exactly the hook's capabilities
    for (cap_value_t c : kHookCapabilities) hook_set |= 1ull << c;
    if (bounding_set() != hook_set) ::_exit(18);
    if (effective(CAP_SYS_ADMIN) || effective(CAP_DAC_OVERRIDE) || effective(CAP_MKNOD) ||
        !effective(CAP_DAC_READ_SEARCH))
      ::_exit(11);
    if (::mount("none", "/tmp", "tmpfs", 0, nullptr) == 0 || errno != EPERM) ::_exit(12);  // no CAP_SYS_ADMIN
    if (!set_effective(kApplyCapabilities) || !effective(CAP_SYS_ADMIN)) ::_exit(13);
    if (effective(CAP_NET_ADMIN) || effective(CAP_SETUID)) ::_exit(14);  // never in the bounding set
    if (effective(CAP_MKNOD)) ::_exit(17);                               // only for the provisioner the hook runs
    if (!keep_only({CAP_SYS_ADMIN}) || effective(CAP_SYS_PTRACE)) ::_exit(15);
    if (set_effective({CAP_SYS_PTRACE}) && effective(CAP_SYS_PTRACE)) ::_exit(16);  // dropped for good
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace gpufrac::hook
