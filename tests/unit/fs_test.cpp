#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/fs.hpp"
#include "scratch_dir.hpp"

namespace gpufrac::fs {
namespace {

std::string temp_dir() {
  return test::scratch_dir("gpufrac-fs");
}

TEST(Fs, AtomicWriteReplacesWithMode) {
  auto dir = temp_dir();
  auto path = dir + "/a.json";
  ASSERT_TRUE(write_file_atomic(path, "one", 0644));
  ASSERT_TRUE(write_file_atomic(path, "two", 0600));
  EXPECT_EQ(*read_file(path), "two");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(Fs, AtomicWriteWithAZeroTail) {
  auto dir = temp_dir();
  auto path = dir + "/region";
  ASSERT_TRUE(write_file_atomic(path, "old"));
  ASSERT_TRUE(write_file_atomic_allocated(path, "head", 10, 0640));
  EXPECT_EQ(*read_file(path), std::string("head\0\0\0\0\0\0", 10));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  auto r = write_file_atomic_allocated(path, "too long", 3);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, path + ": 8 bytes do not fit in 3");
  EXPECT_EQ(read_file(path)->size(), 10u) << "the file stays as it was";
}

// The zeros have their storage before the rename: no hole for a mapping to touch on a full disk.
TEST(Fs, AtomicWriteAllocatesTheZeroTail) {
  auto path = temp_dir() + "/region";
  ASSERT_TRUE(write_file_atomic_allocated(path, "head", 256 << 10));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 256 << 10);
  EXPECT_GE(static_cast<std::uint64_t>(st.st_blocks) * 512, 256u << 10) << "no hole";
}

TEST(Fs, ReadFileIsBounded) {
  auto dir = temp_dir();
  ASSERT_TRUE(write_file_atomic(dir + "/big", std::string(100, 'x')));
  auto r = read_file(dir + "/big", 10);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("larger than 10 bytes"), std::string::npos);
}

TEST(Fs, MissingFileCarriesErrno) {
  auto r = read_file("/nonexistent/gpufrac");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, ENOENT);
}

TEST(Fs, JoinRoot) {
  EXPECT_EQ(join_root("/", "/dev/nvidia0"), "/dev/nvidia0");
  EXPECT_EQ(join_root("/tmp/r/", "/dev/nvidia0"), "/tmp/r/dev/nvidia0");
  EXPECT_EQ(dirname("/a/b/c"), "/a/b");
  EXPECT_EQ(basename("/a/b/c"), "c");
}

TEST(Fs, MakeDirsRefusesFile) {
  auto dir = temp_dir();
  ASSERT_TRUE(write_file_atomic(dir + "/f", "x"));
  EXPECT_FALSE(make_dirs(dir + "/f"));
  EXPECT_TRUE(make_dirs(dir + "/x/y/z"));
}

}  // namespace
}  // namespace gpufrac::fs
