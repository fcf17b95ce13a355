// The burst reclaimer's attribution of the driver's processes to shares (reclaim/reclaim_procs.hpp),
// over a fixture proc root: a process goes to the one share whose cgroup it is in, and shares of
// one cgroup get none of them (the kernel cannot tell their processes apart).
#include <gtest/gtest.h>

#include "fake_proc.hpp"
#include "reclaim/reclaim_procs.hpp"
#include "scratch_dir.hpp"

namespace gpufrac::reclaim {
namespace {

class ReclaimProcs : public ::testing::Test {
 protected:
  void process(std::int64_t pid, const std::string& cgroup) {
    gpufrac::testing::write_stat(root_, pid, 'S', 1000 + static_cast<std::uint64_t>(pid));
    ASSERT_TRUE(fs::write_file_atomic(text::cat(root_, "/", pid, "/cgroup"), "0::" + cgroup + "\n"));
  }
  ShareSite site(const std::string& id, std::int64_t pid) {
    ShareSite s;
    s.key = s.id = id;
    s.pid = pid;
    s.pid_start = 1000 + static_cast<std::uint64_t>(pid);
    s.request = 10;
    s.limit = 30;
    s.device = 0;
    return s;
  }
  std::string root_ = test::scratch_dir("gpufrac-reclaim-procs");
};

TEST_F(ReclaimProcs, EachProcessGoesToTheShareOfItsCgroup) {
  process(101, "/a");
  process(102, "/b");
  process(201, "/a");
  process(202, "/b");
  const std::vector<ShareSite> sites{site("A", 101), site("B", 102)};
  const Attribution a = attribute(sites, {{201, 7}, {202, 5}}, root_);
  ASSERT_EQ(a.of.size(), 2u);
  ASSERT_EQ(a.of[0].size(), 1u);
  EXPECT_EQ(a.of[0][0].pid, 201);
  ASSERT_EQ(a.of[1].size(), 1u);
  EXPECT_EQ(a.of[1][0].pid, 202);
  EXPECT_EQ(a.total, 12u);
  EXPECT_EQ(a.untold, (std::vector<std::vector<std::size_t>>{{}, {}}));
}

TEST_F(ReclaimProcs, SharesOfOneCgroupAreNotToldApartAndGetNoProcess) {
  process(101, "/pod");  // A and B: one linux.cgroupsPath
  process(102, "/pod");
  process(103, "/c");
  process(201, "/pod");
  process(203, "/c");
  const std::vector<ShareSite> sites{site("A", 101), site("B", 102), site("C", 103)};
  const Attribution a = attribute(sites, {{201, 24}, {203, 5}}, root_);
  EXPECT_TRUE(a.of[0].empty()) << "the first share of the cgroup no longer takes its processes";
  EXPECT_TRUE(a.of[1].empty());
  ASSERT_EQ(a.of[2].size(), 1u);
  EXPECT_EQ(a.of[2][0].pid, 203);
  EXPECT_EQ(a.total, 29u);
  EXPECT_TRUE(a.cgroups[0].empty());
  EXPECT_TRUE(a.cgroups[1].empty());
  EXPECT_EQ(a.cgroups[2], std::vector<std::string>{"0::/c"});
  EXPECT_EQ(a.untold, (std::vector<std::vector<std::size_t>>{{1}, {0}, {}}));
  const Memberships m = memberships(sites, root_);
  EXPECT_EQ(m.untold, a.untold);
  // What the plan sees: neither holds anything, so neither is ever the victim.
  const auto shares = burst_shares(sites, {0, 0, 0}, a);
  EXPECT_EQ(shares[0].held, 0u);
  EXPECT_EQ(shares[1].held, 0u);
  EXPECT_EQ(shares[2].held, 5u);
}

}  // namespace
}  // namespace gpufrac::reclaim
