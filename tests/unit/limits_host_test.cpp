// Host side of the shim's ABI: limit files and usage regions (limits/host).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/fs.hpp"
#include "gf_proc.h"
#include "gpufrac/limits_abi.h"
#include "limits/host/limit_file.hpp"
#include "limits/host/region_file.hpp"

namespace gpufrac::limits {
namespace {

const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";
const char* kMig = "MIG-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpufrac-limits-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

TEST(LimitsFile, RendersAndParsesBack) {
  LimitFile f{"abc123", "/run/gpufrac/usage", {{kGpu, 4294967296ull}, {kMig, 1}}};
  const std::string text = render_limit_file(f);
  EXPECT_EQ(text, std::string("version 1\ncontainer abc123\nregion /run/gpufrac/usage\ndevice ") + kGpu +
                      " 4294967296\ndevice " + kMig + " 1\n");
  auto back = parse_limit_file(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, f);
}

TEST(LimitsFile, ComputeLinesFollowTheirDevice) {
  LimitFile f{"abc", "/run/gpufrac/usage", {{kGpu, 10, 250000, ComputeMode::strict, ComputePriority::high}, {kMig, 1}}};
  const std::string text = render_limit_file(f);
  EXPECT_EQ(text, std::string("version 1\ncontainer abc\nregion /run/gpufrac/usage\ndevice ") + kGpu + " 10\ncompute " +
                      kGpu + " 250000 strict high\ndevice " + kMig + " 1\n");
  auto back = parse_limit_file(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, f);
}

TEST(LimitsFile, RefusesBadComputeLines) {
  const std::string head = std::string("version 1\nregion /u\ndevice ") + kGpu + " 1\ncompute " + kGpu;
  const std::pair<std::string, std::string> cases[] = {
      {"version 1\nregion /u\ncompute " + std::string(kGpu) + " 1 fair normal\n",
       "limit file: line 3: compute: no device line for this UUID before it; accepted: device <uuid> <bytes> first"},
      {head + " 0 fair normal\n",
       "limit file: line 4: compute: bad weight; accepted: parts per million of the GPU, 1 to 1000000"},
      {head + " 1000001 fair normal\n",
       "limit file: line 4: compute: bad weight; accepted: parts per million of the GPU, 1 to 1000000"},
      {head + " 5 unfair normal\n", "limit file: line 4: compute: bad mode; accepted: fair or strict"},
      {head + " 5 fair low\n", "limit file: line 4: compute: bad priority; accepted: normal or high, last on the line"},
      {head + " 5 fair high x\n",
       "limit file: line 4: compute: bad priority; accepted: normal or high, last on the line"},
      {head + " 5 fair high\ncompute " + std::string(kGpu) + " 5 fair high\n",
       "limit file: line 5: compute: UUID listed twice"},
  };
  for (const auto& [text, message] : cases) {
    auto f = parse_limit_file(text);
    ASSERT_FALSE(f) << text;
    EXPECT_EQ(f.error().message, message) << text;
  }
}

TEST(LimitsFile, RenderKeepsOneLinePerKey) {
  LimitFile f{"a\nregion /etc", "/r\tx", {}};
  EXPECT_EQ(render_limit_file(f), "version 1\ncontainer a?region /etc\nregion /r?x\n");
}

TEST(LimitsFile, AcceptsCommentsBlankLinesCrlfAndUnknownKeys) {
  auto f = parse_limit_file(std::string("# made by gpufrac\r\n\r\nversion 1\r\nregion /u\r\nfuture-key x y\r\n"
                                        "  device ") +
                            kGpu + "   42  \r\n");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->region, "/u");
  ASSERT_EQ(f->devices.size(), 1u);
  EXPECT_EQ(f->devices[0], (DeviceLimit{kGpu, 42}));
}

TEST(LimitsFile, RefusesWithLineAndAcceptedForm) {
  const std::string dev = std::string("device ") + kGpu + " 1\n";
  const std::pair<std::string, std::string> cases[] = {
      {"region /u\n", "limit file: missing line \"version 1\""},
      {"version 1\n", "limit file: missing line \"region <absolute path>\""},
      {"version 2\nregion /u\n", "limit file: line 1: version: unsupported; accepted: 1"},
      {"version 1\nversion 1\n", "limit file: line 2: version: given twice"},
      {"version 1\nregion u\n", "limit file: line 2: region: bad path; accepted: an absolute path"},
      {"version 1\nregion /u\ndevice GPU-894e9a6d 1\n",
       "limit file: line 3: device: bad UUID; accepted: GPU-<8-4-4-4-12 hex digits> or MIG-<8-4-4-4-12 hex digits>"},
      {"version 1\nregion /u\ndevice " + std::string(kGpu) + " -1\n",
       "limit file: line 3: device: bad limit; accepted: a decimal byte count"},
      {"version 1\nregion /u\ndevice " + std::string(kGpu) + " 18446744073709551616\n",
       "limit file: line 3: device: bad limit; accepted: a decimal byte count"},
      {"version 1\nregion /u\n" + dev + dev, "limit file: line 4: device: UUID listed twice"},
      {"version 1\ncontainer a b\n",
       "limit file: line 2: container: bad id; accepted: 1 to 255 printable characters "
       "without spaces"},
  };
  for (const auto& [text, message] : cases) {
    auto f = parse_limit_file(text);
    ASSERT_FALSE(f) << text;
    EXPECT_EQ(f.error().message, message) << text;
  }
}

TEST(LimitsFile, AtMostSixteenDevices) {
  std::string text = "version 1\nregion /u\n";
  for (int i = 0; i < 17; i++) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08x-0000-0000-0000-000000000000", i);
    text += std::string("device ") + uuid + " 1\n";
  }
  auto f = parse_limit_file(text);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().message, "limit file: line 19: device: more than 16 device lines");
}

TEST(LimitsFile, ReadsAFile) {
  TempDir dir;
  ASSERT_TRUE(fs::write_file_atomic(dir / "limits", "version 1\nregion /u\n"));
  auto f = read_limit_file(dir / "limits");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->region, "/u");
  auto missing = read_limit_file(dir / "nope");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("limit file " + (dir / "nope")), std::string::npos);
}

// A mapped region file for tests that play the shim's part.
class RegionFile {
 public:
  explicit RegionFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDWR);
    void* p = ::mmap(nullptr, sizeof(gpufrac_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    r_ = p == MAP_FAILED ? nullptr : static_cast<gpufrac_region*>(p);
  }
  ~RegionFile() {
    if (r_) ::munmap(r_, sizeof(gpufrac_region));
  }
  gpufrac_region* operator->() const { return r_; }
  void slot(unsigned i, std::uint64_t pid, std::uint64_t start, std::uint64_t state, unsigned dev,
            std::uint64_t bytes) {
    r_->slots[i].owner = gpufrac_owner(pid, start, state);
    r_->slots[i].used[dev] = bytes;
    if (r_->slot_high_water <= i) r_->slot_high_water = i + 1;
  }

 private:
  gpufrac_region* r_;
};

void write_stat(const std::string& root, int pid, char state, unsigned long long start) {
  std::filesystem::create_directories(root + "/" + std::to_string(pid));
  std::ofstream(root + "/" + std::to_string(pid) + "/stat")
      << pid << " (a b) c) " << state << " 1 1 1 0 -1 4194560 10 0 0 0 0 0 0 0 20 0 1 0 " << start
      << " 1000 100 18446744073709551615\n";
}

TEST(LimitsRegion, CreatedZeroedWithHeaderAndMode0666) {
  TempDir dir;
  const mode_t old = ::umask(022);
  auto r = create_region(dir / "usage", {"c", "/u", {{kGpu, 1000}, {kMig, 2000}}});
  ::umask(old);
  ASSERT_TRUE(r) << r.error().message;
  struct stat st {};
  ASSERT_EQ(::stat((dir / "usage").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), sizeof(gpufrac_region));
  RegionFile f(dir / "usage");
  EXPECT_EQ(f->magic, GPUFRAC_REGION_MAGIC);
  EXPECT_EQ(f->version, GPUFRAC_REGION_VERSION);
  EXPECT_EQ(f->region_size, sizeof(gpufrac_region));
  EXPECT_EQ(f->slot_count, static_cast<unsigned>(GPUFRAC_MAX_SLOTS));
  EXPECT_EQ(f->device_count, 2u);
  EXPECT_EQ(f->limit[1], 2000u);
  EXPECT_STREQ(f->uuid[1], kMig);
  EXPECT_EQ(f->slot_high_water, 0u);
  EXPECT_EQ(f->usage_changes, 0u);
  const auto* bytes = reinterpret_cast<const unsigned char*>(&f->slots[0]);
  const std::size_t slot_bytes = sizeof(gpufrac_region) - offsetof(gpufrac_region, slots);
  EXPECT_EQ(std::count(bytes, bytes + slot_bytes, 0), static_cast<std::ptrdiff_t>(slot_bytes)) << "slots are zero";
  EXPECT_GE(static_cast<std::size_t>(st.st_blocks) * 512, sizeof(gpufrac_region))
      << "every page allocated: no hole for a mapping to touch on a full disk";
}

TEST(LimitsRegion, RefusesMoreThanSixteenDevices) {
  TempDir dir;
  LimitFile f{"c", "/u", std::vector<DeviceLimit>(17, {kGpu, 1})};
  auto r = create_region(dir / "usage", f);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "usage region " + (dir / "usage") + ": 17 devices; accepted: at most 16");
}

TEST(LimitsRegion, UsageCountsLiveSlotsOnly) {
  TempDir dir;
  const std::string proc = dir / "proc";
  ASSERT_TRUE(create_region(dir / "usage", {"c", "/u", {{kGpu, 1000}, {kMig, 2000}}}));
  write_stat(proc, 100, 'S', 5000);  // alive
  write_stat(proc, 200, 'Z', 6000);  // zombie
  write_stat(proc, 400, 'R', 7001);  // pid reused: another start time
  write_stat(proc, 500, 'R', 8000);  // alive, but its slot is a RECLAIMING claim
  {
    RegionFile f(dir / "usage");
    f.slot(0, 100, 5000, GPUFRAC_SLOT_OWNED, 0, 10);
    f->slots[0].used[1] = 20;
    f.slot(1, 200, 6000, GPUFRAC_SLOT_OWNED, 0, 300);
    f.slot(2, 300, 1, GPUFRAC_SLOT_OWNED, 1, 4000);  // no such process
    f.slot(4, 400, 7000, GPUFRAC_SLOT_OWNED, 0, 50000);
    f.slot(5, 500, 8000, GPUFRAC_SLOT_RECLAIMING, 0, 600000);
  }
  auto u = read_region_usage(dir / "usage", proc);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->live_processes, 1u);
  EXPECT_EQ(u->dead_slots, 4u);
  ASSERT_EQ(u->devices.size(), 2u);
  EXPECT_EQ(u->devices[0], (DeviceUsage{kGpu, 1000, 10, 650300}));
  EXPECT_EQ(u->devices[1], (DeviceUsage{kMig, 2000, 20, 4000}));
}

TEST(LimitsRegion, AllZeroFileReadsEmpty) {
  TempDir dir;
  ASSERT_TRUE(fs::write_file_atomic(dir / "usage", std::string(sizeof(gpufrac_region), '\0')));
  auto u = read_region_usage(dir / "usage", "/proc");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->live_processes, 0u);
  EXPECT_TRUE(u->devices.empty());
}

TEST(LimitsRegion, RefusesAnotherLayout) {
  TempDir dir;
  ASSERT_TRUE(fs::write_file_atomic(dir / "small", std::string(4096, '\0')));
  auto small = read_region_usage(dir / "small");
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().message, "usage region " + (dir / "small") + ": 4096 bytes; accepted: a regular file of " +
                                       std::to_string(sizeof(gpufrac_region)) + " bytes (gpufrac region version 2)");
  ASSERT_TRUE(create_region(dir / "usage", {"c", "/u", {{kGpu, 1000}}}));
  RegionFile(dir / "usage")->version = 1;  // a container started before the upgrade: same layout
  RegionFile(dir / "usage")->slots[0].owner = gpufrac_owner(static_cast<uint64_t>(getpid()), 1, GPUFRAC_SLOT_OWNED);
  RegionFile(dir / "usage")->slot_high_water = 1;
  RegionFile(dir / "usage")->slots[0].used[0] = 300;
  auto old = read_region_usage(dir / "usage");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->devices.at(0).used + old->devices.at(0).stale, 300u);
  RegionFile(dir / "usage")->version = 3;
  auto other = read_region_usage(dir / "usage");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message, "usage region " + (dir / "usage") +
                                       ": not a gpufrac region of version 2 or 1 (magic, version or size differ)");
}

std::uint64_t read_proc_start(pid_t pid) {
  gf_proc_stat st{};
  EXPECT_EQ(gf_proc_stat_read(("/proc/" + std::to_string(pid) + "/stat").c_str(), &st), 0);
  return st.start;
}

TEST(LimitsRegion, HostReclaimsDeadSlotsOnly) {
  TempDir dir;
  ASSERT_TRUE(create_region(dir / "usage", {"c", "/u", {{kGpu, 1000}}}));
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  auto parent = read_proc_start(::getppid());
  {
    RegionFile f(dir / "usage");
    f.slot(0, static_cast<std::uint64_t>(dead), 1, GPUFRAC_SLOT_OWNED, 0, 100);
    f.slot(1, static_cast<std::uint64_t>(::getppid()), parent, GPUFRAC_SLOT_OWNED, 0, 7);
  }
  auto n = reclaim_region(dir / "usage");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 1u);
  RegionFile f(dir / "usage");
  EXPECT_EQ(f->slots[0].owner, 0u);
  EXPECT_EQ(f->slots[0].used[0], 0u);
  EXPECT_EQ(f->slots[1].used[0], 7u);
  auto bad = reclaim_region(dir / "usage", dir / "noproc");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "cannot read " + (dir / "noproc") +
                                     "/self/stat; accepted: the host's /proc (reclaim needs process liveness)");
}

}  // namespace
}  // namespace gpufrac::limits
