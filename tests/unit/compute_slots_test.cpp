// The containers' compute slots where their files are written and removed (state/compute_slots.hpp,
// state/container_state.hpp), on a temporary state directory.
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "core/fs.hpp"
#include "core/plan/plan.hpp"
#include "core/text.hpp"
#include "limits/host/arbiter_file.hpp"
#include "state/compute_mount.hpp"
#include "state/compute_slots.hpp"
#include "state/container_state.hpp"

namespace {

using namespace gpufrac;

constexpr const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";

class ComputeSlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-slots-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    cfg_.state_dir = tmpl;
  }
  void TearDown() override {
    (void)unmount_compute_dir(compute_arbiter_dir(cfg_, kGpu));
    std::filesystem::remove_all(cfg_.state_dir);
  }
  limits::LimitFile file(std::uint32_t ppm) {
    return {"c", "/run/gpufrac/usage", {{kGpu, 1 << 30, ppm, ComputeMode::strict, ComputePriority::high}}};
  }
  Config cfg_;
};

TEST_F(ComputeSlotsTest, SetUpAtBookingFreedAtRelease) {
  limits::LimitFile f = file(300000);
  ASSERT_TRUE(attach_compute_slots(cfg_, "c.1", f));
  EXPECT_NE(f.devices[0].compute_token, 0u);
  auto v = limits::read_arbiter(compute_arbiter_path(cfg_, kGpu));
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->slots.size(), 1u);
  EXPECT_EQ(v->slots[0].key, "c.1");
  EXPECT_EQ(v->slots[0].weight_ppm, 300000u);
  EXPECT_EQ(v->slots[0].mode, ComputeMode::strict);
  EXPECT_EQ(v->slots[0].priority, ComputePriority::high);
  limits::LimitFile again = file(300000);
  ASSERT_TRUE(attach_compute_slots(cfg_, "c.1", again));
  EXPECT_EQ(again.devices[0].compute_token, f.devices[0].compute_token) << "rewritten in place: same slot, token";
  EXPECT_EQ(*release_compute_slots(cfg_, "c.1"), 1u);
  EXPECT_TRUE(limits::read_arbiter(compute_arbiter_path(cfg_, kGpu))->slots.empty());
}

TEST_F(ComputeSlotsTest, NoComputeShareNoArbiter) {
  limits::LimitFile f = file(0);
  ASSERT_TRUE(attach_compute_slots(cfg_, "c.1", f));
  EXPECT_EQ(f.devices[0].compute_token, 0u);
  EXPECT_FALSE(std::filesystem::exists(compute_arbiter_path(cfg_, kGpu)));
  EXPECT_EQ(*release_compute_slots(cfg_, "c.1"), 0u);
}

TEST_F(ComputeSlotsTest, AWholeGpuIsNeverArbitrated) {
  limits::LimitFile f = file(1000000);
  ASSERT_TRUE(attach_compute_slots(cfg_, "c.1", f));
  EXPECT_EQ(f.devices[0].compute_token, 0u) << "no arbiter line";
  EXPECT_FALSE(std::filesystem::exists(compute_arbiter_path(cfg_, kGpu))) << "no arbiter";
  EXPECT_EQ(limits::render_limit_file(f).find("arbiter"), std::string::npos);
}

TEST_F(ComputeSlotsTest, RemovingTheContainersFilesFreesItsSlots) {
  limits::LimitFile f = file(100000);
  ASSERT_TRUE(attach_compute_slots(cfg_, "c.2", f));
  std::filesystem::create_directories(cfg_.container_dir("c.2"));
  ASSERT_TRUE(remove_container_files(cfg_, "c.2"));
  EXPECT_TRUE(limits::read_arbiter(compute_arbiter_path(cfg_, kGpu))->slots.empty());
}

TEST_F(ComputeSlotsTest, GcSweepsSlotsWithoutBookings) {
  limits::LimitFile a = file(100000), b = file(200000);
  ASSERT_TRUE(attach_compute_slots(cfg_, "kept", a));
  ASSERT_TRUE(attach_compute_slots(cfg_, "gone", b));
  auto young = sweep_compute_slots(cfg_, {"kept"}, 3600);
  ASSERT_TRUE(young);
  EXPECT_TRUE(young->freed.empty());
  auto swept = sweep_compute_slots(cfg_, {"kept"}, 0);
  ASSERT_TRUE(swept);
  EXPECT_EQ(swept->freed, std::vector<std::string>{"gone"});
}

// Mounts on path in this process's mount namespace.
int mounts_on(const std::string& path) {
  int n = 0;
  for (const auto& line : text::split(*fs::read_file("/proc/self/mountinfo"), '\n'))
    if (line.find(" " + path + " ") != std::string::npos) n++;
  return n;
}

// The lease file is on a tmpfs of its own: a tenant's write past its end stops at the bound, the state
// directory does not grow, and gc unmounts it with the GPU's last share.
TEST_F(ComputeSlotsTest, TheArbiterLivesOnABoundedTmpfsOfItsOwn) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  limits::LimitFile f = file(300000);
  ASSERT_TRUE(attach_compute_slots(cfg_, "c.1", f));
  const std::string dir = compute_arbiter_dir(cfg_, kGpu), lease = compute_arbiter_path(cfg_, kGpu);
  ASSERT_EQ(mounts_on(dir), 1) << "the GPU's arbiter directory is a mount";
  limits::LimitFile g = file(200000);
  ASSERT_TRUE(attach_compute_slots(cfg_, "c.2", g));
  EXPECT_EQ(mounts_on(dir), 1) << "a second booking reuses the tmpfs";
  struct statvfs vfs {};
  ASSERT_EQ(::statvfs(dir.c_str(), &vfs), 0);
  EXPECT_LE(vfs.f_blocks * vfs.f_frsize, kComputeDirBytes);
  // A tenant writes past the end as far as it can.
  fs::UniqueFd fd(::open(lease.c_str(), O_WRONLY));
  ASSERT_GE(fd.get(), 0);
  std::string chunk(1 << 20, 'x');
  off_t at = 1 << 20;
  for (int i = 0; i < 64 && ::pwrite(fd.get(), chunk.data(), chunk.size(), at) > 0; i++) at += chunk.size();
  struct stat st {};
  ASSERT_EQ(::stat(lease.c_str(), &st), 0);
  EXPECT_LE(static_cast<std::uint64_t>(st.st_blocks) * 512, kComputeDirBytes) << "bounded by the tmpfs";
  fd = fs::UniqueFd();
  ASSERT_TRUE(release_compute_slots(cfg_, "c.1"));
  ASSERT_TRUE(release_compute_slots(cfg_, "c.2"));
  auto swept = sweep_compute_slots(cfg_, {}, 0);
  ASSERT_TRUE(swept) << swept.error().message;
  EXPECT_EQ(swept->removed, std::vector<std::string>{kGpu});
  EXPECT_EQ(mounts_on(dir), 0) << "gc unmounted the GPU's tmpfs";
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_TRUE(compute_arbiters(cfg_).empty());
}

}  // namespace
