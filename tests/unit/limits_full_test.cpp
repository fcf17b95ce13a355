// The usage region on a full state directory (a small tmpfs): created with every page allocated or
// refused in one line, and never mapped with a hole, by the host or by the shim, so no process
// meets SIGBUS when the directory fills up (core/shared_map.hpp).
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/fs.hpp"
#include "gf_region.h"
#include "limits/host/region_file.hpp"
#include "small_tmpfs.hpp"

namespace gpufrac::limits {
namespace {

const LimitFile kOneGpu{"c", "/run/gpufrac/usage", {{"GPU-894e9a6d-f600-b098-3d59-138988473c2c", 1000}}};

class RegionFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmpfs_.mount(1 << 20);
    if (dir_.empty()) GTEST_SKIP() << tmpfs_.skip_reason();
    path_ = dir_ + "/usage";
  }

  // A region as gpufrac wrote it before: the header, then a hole. With a dead slot: slot 0 (in the
  // first page, written) holds a process that has exited, so that `gc` has something to reclaim.
  void write_old_region(bool dead_slot = false) {
    ASSERT_TRUE(create_region(dir_ + "/new", kOneGpu));
    auto whole = fs::read_file(dir_ + "/new");
    ASSERT_TRUE(whole);
    ::unlink((dir_ + "/new").c_str());
    std::string head = whole->substr(0, dead_slot ? 4096 : offsetof(gpufrac_region, slots));
    if (dead_slot) {
      const pid_t gone = ::fork();
      if (gone == 0) ::_exit(0);
      ::waitpid(gone, nullptr, 0);
      const std::uint32_t high_water = 1;
      const std::uint64_t owner = gpufrac_owner(static_cast<std::uint64_t>(gone), 1, GPUFRAC_SLOT_OWNED), used = 5;
      std::memcpy(head.data() + offsetof(gpufrac_region, slot_high_water), &high_water, sizeof high_water);
      std::memcpy(head.data() + offsetof(gpufrac_region, slots), &owner, sizeof owner);
      std::memcpy(head.data() + offsetof(gpufrac_region, slots) + offsetof(gpufrac_slot, used), &used, sizeof used);
    }
    fs::UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    ASSERT_TRUE(fd);
    ASSERT_TRUE(fs::write_all(fd.get(), head, path_));
    ASSERT_EQ(::ftruncate(fd.get(), sizeof(gpufrac_region)), 0);
  }

  bool allocated() const {
    struct stat st {};
    return ::stat(path_.c_str(), &st) == 0 && static_cast<std::size_t>(st.st_blocks) * 512 >= sizeof(gpufrac_region);
  }

  testing::SmallTmpfs tmpfs_;
  std::string dir_, path_;
};

// A child maps the region and writes every slot's owner word as a new process would: its wait
// status (0, or the SIGBUS that kills it).
int write_every_slot(const std::string& path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    void* p = ::mmap(nullptr, sizeof(gpufrac_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) ::_exit(3);
    for (auto& slot : static_cast<gpufrac_region*>(p)->slots) __atomic_store_n(&slot.owner, 0, __ATOMIC_SEQ_CST);
    ::_exit(0);
  }
  int status = -1;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST_F(RegionFullTest, EveryPageIsAllocatedSoAFullDirectoryCannotBreakAMapping) {
  ASSERT_TRUE(create_region(path_, kOneGpu));
  EXPECT_TRUE(allocated());
  tmpfs_.fill(0);
  EXPECT_EQ(write_every_slot(path_), 0) << "1024 slots written on a full tmpfs, no SIGBUS";
  auto u = read_region_usage(path_);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->live_processes, 0u);
}

TEST_F(RegionFullTest, CreationOnAFullDirectoryIsRefusedInOneLine) {
  for (std::uint64_t kib = 0; kib <= 48; kib += 4) {
    tmpfs_.fill(kib << 10);
    auto r = create_region(path_, kOneGpu);
    ASSERT_FALSE(r) << kib << " KiB free";
    EXPECT_EQ(r.error().message, "cannot create the usage region " + path_ + ": No space left on device");
    EXPECT_EQ(r.error().err, ENOSPC);
    EXPECT_FALSE(fs::exists(path_));
    EXPECT_EQ(tmpfs_.free_bytes(), kib << 10) << "the temp file is gone";
  }
}

TEST_F(RegionFullTest, AHoleIsNeverMappedOnAFullDirectory) {
  write_old_region(true);
  EXPECT_FALSE(allocated());
  tmpfs_.fill(0);
  auto u = read_region_usage(path_);  // a copy read with pread: a hole reads as zeros, nothing mapped
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->dead_slots, 1u);
  EXPECT_FALSE(allocated()) << "reading allocates nothing";
  const std::string line = "usage region " + path_ +
                           " has a hole (written by an older gpufrac) that cannot be allocated: No space left on "
                           "device; it is not mapped (touching the hole would be SIGBUS): free space on the "
                           "filesystem of " +
                           dir_ + ", then try again";
  auto n = reclaim_region(path_);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().message, line);
  char err[256] = "";
  EXPECT_EQ(gf_region_map(path_.c_str(), err, sizeof err), nullptr) << "the shim does not map it either";
  EXPECT_STREQ(err, "its hole cannot be allocated: No space left on device (its filesystem is full)");
}

TEST_F(RegionFullTest, AHoleIsFilledBeforeMappingWhenThereIsRoom) {
  write_old_region(true);
  auto u = read_region_usage(path_);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->devices.size(), 1u);
  EXPECT_FALSE(allocated()) << "a reader never maps, so it allocates nothing";
  auto n = reclaim_region(path_);  // gc maps it for its compare-and-swaps: the hole is filled first
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 1u);
  EXPECT_TRUE(allocated());
  ::unlink(path_.c_str());
  write_old_region();
  auto none = reclaim_region(path_);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, 0u);
  EXPECT_FALSE(allocated()) << "no dead slot: nothing mapped";
  char err[256] = "";
  gpufrac_region* r = gf_region_map(path_.c_str(), err, sizeof err);
  ASSERT_NE(r, nullptr) << err;
  ::munmap(r, sizeof *r);
  EXPECT_TRUE(allocated()) << "the shim filled it";
}

// In a child under a seccomp filter that refuses fallocate (EPERM), as a strict container profile
// may: maps the region as the shim does. "" when it is mapped, else the shim's reason.
std::string shim_map_without_fallocate(const std::string& path) {
  int out[2];
  if (::pipe(out) != 0) return "no pipe";
  const pid_t pid = ::fork();
  if (pid == 0) {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fallocate, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{sizeof filter / sizeof filter[0], filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
      ::_exit(3);
    char err[256] = "";
    const bool mapped = gf_region_map(path.c_str(), err, sizeof err) != nullptr;
    const ssize_t n = mapped ? 0 : ::write(out[1], err, std::strlen(err));
    ::_exit(n < 0 ? 4 : 0);
  }
  ::close(out[1]);
  char buf[256];
  const ssize_t n = ::read(out[0], buf, sizeof buf);
  ::close(out[0]);
  int status = -1;
  ::waitpid(pid, &status, 0);
  if (status != 0) return "child status " + std::to_string(status);
  return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

TEST_F(RegionFullTest, TheShimNeedsNoFallocateForARegionTheHostMade) {
  ASSERT_TRUE(create_region(path_, kOneGpu));
  EXPECT_EQ(shim_map_without_fallocate(path_), "") << "st_blocks shows no hole: nothing to allocate";
  ::unlink(path_.c_str());
  write_old_region();
  EXPECT_EQ(shim_map_without_fallocate(path_), "its hole cannot be allocated: Operation not permitted");
}

}  // namespace
}  // namespace gpufrac::limits
