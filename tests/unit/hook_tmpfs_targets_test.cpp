// Mount points made and opened through the fd of gpufrac's detached tmpfs (hook/tmpfs_targets.hpp):
// nothing is resolved from a container root, a name already there is an error, a symlink is never
// followed, and a target leaves the tmpfs's mount for nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/mount_place.hpp"
#include "hook/mount_fd.hpp"
#include "hook/tmpfs_targets.hpp"

namespace gpufrac::hook {
using namespace gpufrac::bundle;  // the bundle layer the hook is built on
namespace {

TEST(TmpfsTargets, PathBeneath) {
  EXPECT_EQ(path_beneath("/run/gpufrac", "/run/gpufrac/limits"), "limits");
  EXPECT_EQ(path_beneath("/run/gpufrac/", "/run/gpufrac/a/b"), "a/b");
  EXPECT_EQ(path_beneath("/run/gpufrac", "/run/gpufrac//usage"), "usage");
  EXPECT_EQ(path_beneath("/run/gpufrac", "/run/gpufrac"), std::nullopt);
  EXPECT_EQ(path_beneath("/run/gpufrac", "/run/gpufrac/"), std::nullopt);
  EXPECT_EQ(path_beneath("/run/gpufrac", "/run/gpufracx/limits"), std::nullopt);
  EXPECT_EQ(path_beneath("/run/gpufrac", "/etc/ld.so.preload"), std::nullopt);
}

class TmpfsTargetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (fsopen)";
    auto fd = make_tmpfs("1m", 0755);
    ASSERT_TRUE(fd) << fd.error().message;
    tmpfs_ = std::move(*fd);
  }
  fs::UniqueFd tmpfs_;
};

TEST_F(TmpfsTargetsTest, MadeAndOpenedThroughTheDetachedTmpfsFd) {
  ASSERT_TRUE(make_tmpfs_target(tmpfs_.get(), "limits", TargetKind::file, "/run/gpufrac/limits"));
  ASSERT_TRUE(make_tmpfs_target(tmpfs_.get(), "lib/nested", TargetKind::directory, "/run/gpufrac/lib/nested"));
  struct stat st {};
  ASSERT_EQ(::fstatat(tmpfs_.get(), "limits", &st, AT_SYMLINK_NOFOLLOW), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  ASSERT_EQ(::fstatat(tmpfs_.get(), "lib/nested", &st, AT_SYMLINK_NOFOLLOW), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  auto file = open_tmpfs_target(tmpfs_.get(), "limits", TargetKind::file, "/run/gpufrac/limits");
  ASSERT_TRUE(file) << file.error().message;
  auto dir = open_tmpfs_target(tmpfs_.get(), "lib/nested", TargetKind::directory, "/run/gpufrac/lib/nested");
  ASSERT_TRUE(dir) << dir.error().message;
  // Both on the tmpfs's own mount.
  auto top = mount_place(tmpfs_.get(), "tmpfs");
  auto inner = mount_place(file->get(), "limits");
  ASSERT_TRUE(top && inner);
  EXPECT_TRUE(top->mount_root);
  EXPECT_EQ(inner->mount_id, top->mount_id);
  EXPECT_FALSE(inner->mount_root);
}

TEST_F(TmpfsTargetsTest, ANameAlreadyThereIsAnError) {
  ASSERT_TRUE(make_tmpfs_target(tmpfs_.get(), "usage", TargetKind::file, "/run/gpufrac/usage"));
  auto again = make_tmpfs_target(tmpfs_.get(), "usage", TargetKind::file, "/run/gpufrac/usage");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().err, EEXIST);
  EXPECT_EQ(again.error().message.find('\n'), std::string::npos);
  EXPECT_NE(again.error().message.find("\"/run/gpufrac/usage\""), std::string::npos) << again.error().message;
}

TEST_F(TmpfsTargetsTest, ASymlinkInTheTmpfsIsNeverFollowed) {
  ASSERT_EQ(::symlinkat("/etc", tmpfs_.get(), "link"), 0);
  auto made = make_tmpfs_target(tmpfs_.get(), "link/passwd", TargetKind::file, "/run/gpufrac/link/passwd");
  EXPECT_FALSE(made);
  auto over = make_tmpfs_target(tmpfs_.get(), "link", TargetKind::file, "/run/gpufrac/link");
  EXPECT_FALSE(over);
  auto opened = open_tmpfs_target(tmpfs_.get(), "link", TargetKind::file, "/run/gpufrac/link");
  EXPECT_FALSE(opened);
  EXPECT_FALSE(open_tmpfs_target(tmpfs_.get(), "../x", TargetKind::file, "/run/x"));
}

TEST_F(TmpfsTargetsTest, TheWrongKindIsRefused) {
  ASSERT_TRUE(make_tmpfs_target(tmpfs_.get(), "limits", TargetKind::file, "/run/gpufrac/limits"));
  auto r = open_tmpfs_target(tmpfs_.get(), "limits", TargetKind::directory, "/run/gpufrac/limits");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "gpufrac's tmpfs: mount point \"/run/gpufrac/limits\": is not the kind of file gpufrac made there");
}

}  // namespace
}  // namespace gpufrac::hook
