#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bundle/rootfs_path.hpp"

namespace gpufrac::hook {
using namespace gpufrac::bundle;  // the bundle layer the hook is built on
namespace {

namespace stdfs = std::filesystem;

class RootfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-rootfs-XXXXXX";
    base_ = ::mkdtemp(tmpl);
    rootfs_ = base_ + "/rootfs";
    host_ = base_ + "/host";
    stdfs::create_directories(rootfs_ + "/etc");
    stdfs::create_directories(host_);
    std::ofstream(host_ + "/secret") << "host";
    root_fd_ = fs::UniqueFd(::open(rootfs_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_fd_);
  }
  void TearDown() override { stdfs::remove_all(base_); }
  std::vector<std::string> host_entries() {
    std::vector<std::string> out;
    for (const auto& e : stdfs::directory_iterator(host_)) out.push_back(e.path().filename());
    return out;
  }
  std::string base_, rootfs_, host_;
  fs::UniqueFd root_fd_;
};

TEST_F(RootfsTest, CreatesMissingDirectoriesAndFiles) {
  auto d = ensure_target_in_root(root_fd_.get(), "/run/gpufrac", TargetKind::directory);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(stdfs::is_directory(rootfs_ + "/run/gpufrac"));
  auto f = ensure_target_in_root(root_fd_.get(), "/etc/ld.so.preload", TargetKind::file);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(stdfs::is_regular_file(rootfs_ + "/etc/ld.so.preload"));
  EXPECT_EQ(stdfs::file_size(rootfs_ + "/etc/ld.so.preload"), 0u);
}

TEST_F(RootfsTest, KeepsExistingFileContent) {
  std::ofstream(rootfs_ + "/etc/ld.so.preload") << "/lib/x.so\n";
  ASSERT_TRUE(ensure_target_in_root(root_fd_.get(), "/etc/ld.so.preload", TargetKind::file));
  EXPECT_EQ(stdfs::file_size(rootfs_ + "/etc/ld.so.preload"), 10u);
}

struct Attack {
  const char* name;
  const char* link_at;     // path inside the rootfs that becomes a symlink
  const char* link_to;     // its target ({host} = the host directory)
  const char* mount_path;  // what the hook tries to mount
  TargetKind kind;
};

class SymlinkAttack : public RootfsTest, public ::testing::WithParamInterface<Attack> {};

TEST_P(SymlinkAttack, RefusedWithOneLineAndNoHostChange) {
  const Attack& a = GetParam();
  std::string target = a.link_to;
  if (auto pos = target.find("{host}"); pos != std::string::npos) target.replace(pos, 6, host_);
  stdfs::create_directories(stdfs::path(rootfs_ + a.link_at).parent_path());
  stdfs::remove_all(rootfs_ + a.link_at);
  stdfs::create_symlink(target, rootfs_ + a.link_at);
  auto before = host_entries();
  auto r = ensure_target_in_root(root_fd_.get(), a.mount_path, a.kind);
  ASSERT_FALSE(r) << a.name;
  EXPECT_NE(r.error().message.find("symlink"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  EXPECT_EQ(host_entries(), before) << a.name;
}

INSTANTIATE_TEST_SUITE_P(
    Table, SymlinkAttack,
    ::testing::Values(
        Attack{"etc absolute", "/etc", "{host}", "/etc/ld.so.preload", TargetKind::file},
        Attack{"etc relative", "/etc", "../../host", "/etc/ld.so.preload", TargetKind::file},
        Attack{"preload absolute", "/etc/ld.so.preload", "{host}/secret", "/etc/ld.so.preload", TargetKind::file},
        Attack{"preload relative", "/etc/ld.so.preload", "../../../host/secret", "/etc/ld.so.preload",
               TargetKind::file},
        Attack{"preload to new file", "/etc/ld.so.preload", "{host}/created", "/etc/ld.so.preload", TargetKind::file},
        Attack{"run absolute", "/run", "{host}", "/run/gpufrac", TargetKind::directory},
        Attack{"shim dir", "/run/gpufrac", "../../host", "/run/gpufrac", TargetKind::directory},
        Attack{"dev absolute", "/dev", "{host}", "/dev/nvidia0", TargetKind::file},
        Attack{"device node", "/dev/nvidia0", "{host}/secret", "/dev/nvidia0", TargetKind::file},
        Attack{"device relative", "/dev/nvidiactl", "../../../host/x", "/dev/nvidiactl", TargetKind::file}),
    [](const auto& test_param) {
      std::string n = test_param.param.name;
      for (auto& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

// A link that stays inside the root, to a target that exists: the one-syscall resolution (openat2)
// refuses it as the walk does, for a component and for the target itself.
TEST_F(RootfsTest, AnInRootSymlinkToAnExistingTargetIsRefusedToo) {
  stdfs::create_directories(rootfs_ + "/usr/etc");
  std::ofstream(rootfs_ + "/usr/etc/ld.so.preload") << "x\n";
  stdfs::remove_all(rootfs_ + "/etc");
  stdfs::create_symlink("usr/etc", rootfs_ + "/etc");
  stdfs::create_directories(rootfs_ + "/dev");
  std::ofstream(rootfs_ + "/dev/real") << "";
  stdfs::create_symlink("real", rootfs_ + "/dev/nvidia0");
  for (const char* path : {"/etc/ld.so.preload", "/dev/nvidia0"}) {
    auto made = ensure_target_in_root(root_fd_.get(), path, TargetKind::file);
    ASSERT_FALSE(made) << path;
    EXPECT_NE(made.error().message.find("symlink"), std::string::npos) << made.error().message;
    auto opened = open_in_root(root_fd_.get(), path);
    ASSERT_FALSE(opened) << path;
    EXPECT_NE(opened.error().message.find("symlink"), std::string::npos) << opened.error().message;
  }
  auto plain = open_in_root(root_fd_.get(), "/usr/etc/ld.so.preload");
  ASSERT_TRUE(plain) << plain.error().message;
  struct stat st {};
  ASSERT_EQ(::fstat(plain->get(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(RootfsTest, RefusesDotDotAndRelativePaths) {
  for (const char* bad : {"/../host/x", "/etc/../../host", "etc/ld.so.preload", "", "/"}) {
    auto r = ensure_target_in_root(root_fd_.get(), bad, TargetKind::file);
    ASSERT_FALSE(r) << bad;
    EXPECT_TRUE(r.error().message.starts_with("container path")) << r.error().message;
  }
  EXPECT_TRUE(host_entries().size() == 1);
}

TEST_F(RootfsTest, RefusesDirectoryWhereFileExpected) {
  stdfs::create_directories(rootfs_ + "/etc/ld.so.preload");
  auto r = ensure_target_in_root(root_fd_.get(), "/etc/ld.so.preload", TargetKind::file);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is a directory"), std::string::npos);
}

TEST_F(RootfsTest, OpenInRootDoesNotCreate) {
  auto r = open_in_root(root_fd_.get(), "/run/gpufrac");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not exist"), std::string::npos);
  EXPECT_FALSE(stdfs::exists(rootfs_ + "/run"));
}

}  // namespace
}  // namespace gpufrac::hook
