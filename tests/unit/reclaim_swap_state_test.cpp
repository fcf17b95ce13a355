// burst.reclaim: swap's files (reclaim/swap_state.hpp, reclaim/reclaim_log.hpp): a share's swap
// state in its container directory read back as written, and the swap counters and events of the
// reclaim log kept across a save and a load (a log written before swap reads as none), and the
// shares whose processes are MPS clients (never swapped).
#include <gtest/gtest.h>

#include "core/fs.hpp"
#include "core/plan/plan.hpp"
#include "reclaim/reclaim_log.hpp"
#include "reclaim/reclaim_shares.hpp"
#include "reclaim/swap_budget.hpp"
#include "reclaim/swap_state.hpp"
#include "scratch_dir.hpp"

namespace gpufrac::reclaim {
namespace {

TEST(SwapState, ReadBackAsWrittenInTheContainersDirectory) {
  Config cfg;
  cfg.state_dir = test::scratch_dir("gpufrac-swap-state");
  ASSERT_TRUE(fs::make_dirs(container_files(cfg, "ctr").dir, 0755));
  auto none = load_swap_state(cfg, "ctr");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  const SwapState st{"GPU-1", "ctr", "owner", SwapPhase::swapped, 1700000000, {{41, 7, 3u << 20}, {42, 8, 1u << 20}}};
  ASSERT_TRUE(save_swap_state(cfg, "ctr", st));
  EXPECT_EQ(swap_state_path(cfg, "ctr"), cfg.state_dir + "/containers/ctr/swap");
  auto back = load_swap_state(cfg, "ctr");
  ASSERT_TRUE(back && *back);
  EXPECT_EQ(**back, st);
  EXPECT_EQ((*back)->bytes(), 4u << 20);
  remove_swap_state(cfg, "ctr");
  EXPECT_FALSE(fs::exists(swap_state_path(cfg, "ctr")));
  ASSERT_TRUE(fs::write_file_atomic(swap_state_path(cfg, "ctr"), "{\"gpu\": 1}\n"));
  auto bad = load_swap_state(cfg, "ctr");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("/containers/ctr/swap: not a swap state ("), std::string::npos)
      << bad.error().message;
}

TEST(SwapState, TheLogCountsSwapsAndKeepsWhySwapWasNotUsed) {
  const std::string path = test::scratch_dir("gpufrac-swap-log") + "/reclaims.json";
  ReclaimLog log;
  ReclaimEvent out{1, "GPU-1", "a", 41, 5u << 20, "b"};
  out.action = "swapped out";
  record_swap(log, out, "ka");
  ReclaimEvent in{2, "GPU-1", "a", 41, 5u << 20, ""};
  in.action = "swapped in";
  record_swap(log, in, "ka");
  ReclaimEvent stop{3, "GPU-1", "c", 43, 1u << 20, "b"};
  stop.reason = "an MPS share (the driver cannot checkpoint MPS clients)";
  record_stop(log, stop, "kc");
  EXPECT_EQ(log.swap_outs.at("ka"), 1u);
  EXPECT_EQ(log.swap_ins.at("ka"), 1u);
  EXPECT_EQ(log.swap_out_bytes.at("ka"), 5u << 20);
  EXPECT_EQ(log.swap_in_bytes.at("ka"), 5u << 20);
  EXPECT_EQ(log.gpu_swap_outs.at("GPU-1"), 1u);
  EXPECT_EQ(log.stopped.at("GPU-1"), 1u);
  ASSERT_TRUE(save_reclaim_log(path, log));
  auto back = load_reclaim_log(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, log);
  ASSERT_TRUE(fs::write_file_atomic(path,
                                    "{\"events\": [{\"time\": 1, \"gpu\": \"G\", \"victim\": \"a\", \"pid\": 4, "
                                    "\"bytes\": 5, \"owner\": \"b\"}], \"stopped\": {}, \"refused\": {}, "
                                    "\"share_stopped\": {}, \"flags\": {}}\n"));
  auto old = load_reclaim_log(path);
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->events.at(0).action, "stopped");
  EXPECT_TRUE(old->swap_outs.empty());
}

// Swap falls back to kill for an MPS client: an SM share, or any share of a GPU in MPS mode.
TEST(SwapState, SharesOfAnMpsGpuAreMarked) {
  Config cfg;
  cfg.state_dir = test::scratch_dir("gpufrac-swap-mps");
  auto entry = [](const std::string& id, const std::string& gpu, std::uint64_t limit, ComputeMode mode) {
    LedgerEntry e;
    e.container_id = id;
    e.gpu_uuid = e.device_uuid = gpu;
    e.bytes = 10;
    e.limit_bytes = limit;
    e.compute_mode = mode;
    e.pid = 1;
    return e;
  };
  LedgerState state;
  state.entries = {entry("a", "GPU-1", 30, ComputeMode::fair), entry("b", "GPU-1", 0, ComputeMode::sm),
                   entry("c", "GPU-2", 30, ComputeMode::fair), entry("d", "GPU-2", 0, ComputeMode::fair)};
  auto sites = burst_sites(state, cfg);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_FALSE(sites["GPU-1"][0].mps);
  EXPECT_TRUE(sites["GPU-1"][1].mps);
  EXPECT_FALSE(sites["GPU-2"][0].mps);
  state.mps.push_back({"GPU-2", 0});
  sites = burst_sites(state, cfg);
  EXPECT_TRUE(sites["GPU-2"][0].mps);
  EXPECT_TRUE(sites["GPU-2"][1].mps);
}

// Host memory: a swap needs room in the processes' memory cgroup (v2 or a hybrid host's v1) and
// within the node's budget.
TEST(SwapState, TheCgroupsRoomAndTheNodesBudget) {
  const std::string root = test::scratch_dir("gpufrac-swap-room");
  const std::string proc = root + "/proc", cg = root + "/cg";
  auto put = [](const std::string& path, const std::string& text) {
    ASSERT_TRUE(fs::make_dirs(path.substr(0, path.rfind('/')), 0755));
    ASSERT_TRUE(fs::write_file_atomic(path, text));
  };
  put(proc + "/10/cgroup", "0::/pod/a\n");
  put(cg + "/pod/a/memory.max", "8589934592\n");
  put(cg + "/pod/a/memory.current", "1073741824\n");
  EXPECT_EQ(cgroup_room(proc, cg, 10), 7ull << 30);
  put(proc + "/11/cgroup", "4:memory:/ctr/b\n0::/\n");
  put(cg + "/memory/ctr/b/memory.limit_in_bytes", "2147483648\n");
  put(cg + "/memory/ctr/b/memory.usage_in_bytes", "536870912\n");
  EXPECT_EQ(cgroup_room(proc, cg, 11), 3ull << 29);
  put(proc + "/12/cgroup", "0::/free\n");
  put(cg + "/free/memory.max", "max\n");
  EXPECT_EQ(cgroup_room(proc, cg, 12), std::nullopt);
  EXPECT_EQ(cgroup_room(proc, cg, 13), std::nullopt) << "no such process";
  EXPECT_EQ(swap_room_problem(5ull << 30, 7ull << 30, 0, 0), "");
  EXPECT_EQ(swap_room_problem(8ull << 30, 7ull << 30, 0, 0),
            "its memory cgroup has 7.0 GiB of room and the swap needs 8.0 GiB of host memory (a checkpoint is "
            "charged to the process's cgroup)");
  EXPECT_EQ(swap_room_problem(8ull << 30, std::nullopt, 10ull << 30, 4ull << 30),
            "the node's swap budget (swap.host-memory: 10.0 GiB) has 6.0 GiB left and the swap needs 8.0 GiB");
  EXPECT_EQ(swap_room_problem(6ull << 30, std::nullopt, 10ull << 30, 4ull << 30), "");
}

}  // namespace
}  // namespace gpufrac::reclaim
