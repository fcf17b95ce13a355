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

#include <cstring>
#include <filesystem>
#include <fstream>

#include "hook/ns_apply.hpp"
#include "hook/privileges.hpp"

namespace gpufrac::hook {
using namespace gpufrac::bundle;  // the bundle layer the hook is built on
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
    std::ofstream(base_ + "/host/shim.so") << "shim";
    stdfs::create_directories(base_ + "/canary");
    spawn();
  }
  // The container: a child in a mount namespace of its own, a copy of ours as it is now (mounts the
  // test made under the rootfs before are in it, as a host mount reaches a runc container).
  void spawn() {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
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
    for (auto it = host_mounts_.rbegin(); it != host_mounts_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
    if (!base_.empty()) stdfs::remove_all(base_);
  }
  // A mount in the test's (host) namespace, undone at the end.
  void host_mount(const std::string& source, const std::string& target, const char* type, unsigned long flags) {
    ASSERT_EQ(::mount(source.c_str(), target.c_str(), type, flags, nullptr), 0) << target << ": " << strerror(errno);
    host_mounts_.push_back(target);
  }
  Result<> apply(const Edits& e) {
    auto prepared = prepare_mounts(e);
    if (!prepared) return std::unexpected(prepared.error());
    return attach_in_namespace({"/proc/" + std::to_string(child_) + "/ns/mnt", rootfs_}, *prepared);
  }
  bool canary_untouched() { return stdfs::is_empty(base_ + "/canary"); }
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
  // The whole of gpufrac's directory, as the hook and the CDI device's hook mount it.
  Edits gpufrac_dir() {
    Edits e = edits();
    e.mounts.insert(
        e.mounts.begin() + 1,
        {base_ + "/host/shim.so", "/run/gpufrac/libgpufrac-limits.so", "bind", {"ro", "nosuid", "nodev", "bind"}});
    return e;
  }
  std::string base_, rootfs_;
  std::vector<std::string> host_mounts_;
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
                  "/run/gpufrac/limits", bundle::TargetKind::file});
  EXPECT_TRUE(verify_mounts(root.get(), same));  // the path shows the source's inode
  std::vector<PreparedMount> swapped;
  swapped.push_back({fs::UniqueFd(::open((base_ + "/host/limits").c_str(), O_PATH | O_CLOEXEC)), "/run/gpufrac/limits",
                     bundle::TargetKind::file});
  auto r = verify_mounts(root.get(), swapped);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "container path \"/run/gpufrac/limits\" does not show what gpufrac mounted there (the root changed "
            "during the hook?); the container is not started");
  std::vector<PreparedMount> missing;
  missing.push_back({fs::UniqueFd(::open((base_ + "/host/usage").c_str(), O_PATH | O_CLOEXEC)), "/run/gpufrac/usage",
                     bundle::TargetKind::file});
  EXPECT_FALSE(verify_mounts(root.get(), missing));  // nothing there at all
}

// The mount points of what nests in gpufrac's tmpfs are made in it through its fd while it is still
// detached (prepare_mounts), never by a walk from the container root.
TEST_F(NsApplyTest, NestedMountPointsAreMadeInTheDetachedTmpfs) {
  auto prepared = prepare_mounts(gpufrac_dir());
  ASSERT_TRUE(prepared) << prepared.error().message;
  ASSERT_EQ((*prepared)[0].container_path, "/run/gpufrac");
  EXPECT_TRUE((*prepared)[0].own_tmpfs);
  std::vector<std::string> nested;
  for (const auto& m : *prepared) {
    if (!m.tmpfs) continue;
    EXPECT_EQ(*m.tmpfs, 0u) << m.container_path;
    struct stat st {};
    EXPECT_EQ(::fstatat((*prepared)[0].source.get(), m.rel.c_str(), &st, AT_SYMLINK_NOFOLLOW), 0) << m.rel;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << m.rel;
    nested.push_back(m.rel);
  }
  EXPECT_EQ(nested, (std::vector<std::string>{"libgpufrac-limits.so", "limits", "usage"}));
  EXPECT_FALSE(stdfs::exists(rootfs_ + "/run"));  // nothing made in the image yet
}

// A host directory below the top level of the rootfs (as exchanging a directory of the rootfs for one
// that holds a host mount shows it during the hook): refused, nothing created in it or mounted on it.
TEST_F(NsApplyTest, AHostDirectoryBelowTheTopLevelIsNeitherWrittenNorMountedOver) {
  stdfs::create_directories(rootfs_ + "/run/gpufrac");
  host_mount(base_ + "/canary", rootfs_ + "/run/gpufrac", nullptr, MS_BIND);
  spawn();
  auto r = apply(gpufrac_dir());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "container path \"/run/gpufrac\": is on another mount than \"/run\"; gpufrac creates and mounts only on "
            "the mount of the path's top-level directory (the container root's, or the runtime's there, like /dev)");
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  EXPECT_TRUE(canary_untouched());
  EXPECT_TRUE(stdfs::is_empty(in_ns("/run/gpufrac")));
}

TEST_F(NsApplyTest, AFileIsNeverCreatedInAHostDirectoryBelowTheTopLevel) {
  stdfs::create_directories(rootfs_ + "/usr/lib");
  host_mount(base_ + "/canary", rootfs_ + "/usr/lib", nullptr, MS_BIND);
  spawn();
  Edits e;
  e.mounts = {{base_ + "/host/shim.so", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "bind", {"ro", "bind"}}};
  auto r = apply(e);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "container path \"/usr/lib/x86_64-linux-gnu/libcuda.so.1\": \"/usr/lib\" is on another mount than "
            "\"/usr\"; gpufrac creates and mounts only on the mount of the path's top-level directory (the "
            "container root's, or the runtime's there, like /dev)");
  EXPECT_TRUE(canary_untouched());
}

// A mount at the top level is the runtime's (runc's /dev tmpfs): mount points are made in it.
TEST_F(NsApplyTest, AMountAtTheTopLevelTakesMountPoints) {
  stdfs::create_directories(rootfs_ + "/dev");
  host_mount("tmpfs", rootfs_ + "/dev", "tmpfs", 0);
  spawn();
  Edits e;
  e.device_nodes = {{"/dev/nvidia-caps/nvidia-cap1", base_ + "/host/dev/nvidia0", 'c', 1, 3}};
  auto r = apply(e);
  ASSERT_TRUE(r) << r.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(in_ns("/dev/nvidia-caps/nvidia-cap1").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A file the runtime bound (a spec's /etc/ld.so.preload) is a mount of its own: mounted over.
TEST_F(NsApplyTest, AFileTheRuntimeBoundIsMountedOver) {
  std::ofstream(rootfs_ + "/etc/ld.so.preload") << "";
  std::ofstream(base_ + "/image-preload") << "/lib/x.so\n";
  host_mount(base_ + "/image-preload", rootfs_ + "/etc/ld.so.preload", nullptr, MS_BIND);
  spawn();
  Edits e;
  e.mounts = {{base_ + "/host/preload", "/etc/ld.so.preload", "bind", {"ro", "nosuid", "nodev", "bind"}}};
  auto r = apply(e);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(slurp(in_ns("/etc/ld.so.preload")), "/run/gpufrac/libgpufrac-limits.so\n");
}

// The tmpfs a CDI spec of gpufrac mounted, the shim in it: the CDI device's hook mounts gpufrac's own
// over it and writes nothing into it.
TEST_F(NsApplyTest, StacksOverTheTmpfsOfACdiSpec) {
  stdfs::create_directories(rootfs_ + "/run/gpufrac");
  host_mount("tmpfs", rootfs_ + "/run/gpufrac", "tmpfs", 0);
  std::ofstream(rootfs_ + "/run/gpufrac/libgpufrac-limits.so") << "";
  host_mount(base_ + "/host/shim.so", rootfs_ + "/run/gpufrac/libgpufrac-limits.so", nullptr, MS_BIND);
  spawn();
  auto r = apply(gpufrac_dir());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(slurp(in_ns("/run/gpufrac/limits")), "version 1\n");
  EXPECT_EQ(slurp(in_ns("/run/gpufrac/libgpufrac-limits.so")), "shim");
  std::vector<std::string> names;
  for (const auto& e : stdfs::directory_iterator(rootfs_ + "/run/gpufrac")) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"libgpufrac-limits.so"});
}

// Another tmpfs there (no mount of the shim in it) is not a spec's: the mount rule refuses it.
TEST_F(NsApplyTest, ATmpfsWithoutTheShimIsNotTheSpecs) {
  stdfs::create_directories(rootfs_ + "/run/gpufrac");
  host_mount("tmpfs", rootfs_ + "/run/gpufrac", "tmpfs", 0);
  std::ofstream(rootfs_ + "/run/gpufrac/libgpufrac-limits.so") << "shim";  // the same bytes, not the shim's mount
  spawn();
  auto r = apply(gpufrac_dir());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is on another mount than \"/run\""), std::string::npos) << r.error().message;
  std::vector<std::string> names;
  for (const auto& e : stdfs::directory_iterator(rootfs_ + "/run/gpufrac")) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"libgpufrac-limits.so"});
}

// A mount point inside a directory gpufrac binds would be made in the host's directory.
TEST_F(NsApplyTest, AMountPointInsideADirectoryBindIsRefused) {
  Edits e;
  e.mounts = {{base_ + "/canary", "/opt/dir", "bind", {"ro", "bind"}},
              {base_ + "/host/limits", "/opt/dir/limits", "bind", {"ro", "bind"}}};
  auto prepared = prepare_mounts(e);
  ASSERT_FALSE(prepared);
  EXPECT_EQ(prepared.error().message,
            "mount target \"/opt/dir/limits\" lies in the bind at \"/opt/dir\"; gpufrac makes mount points only in "
            "its own tmpfs");
  EXPECT_TRUE(canary_untouched());
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
