// Burstable memory in `gpufrac status` and `gpufrac metrics` (cli/status_burst.hpp): what a share
// borrows, the reclaimer's log as JSON and text, and the series.
#include <stdlib.h>
#include <time.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/status_burst.hpp"
#include "shipped_machines.hpp"

namespace gpufrac::cli {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

ShareStatus burst_share(std::optional<std::uint64_t> used) {
  ShareStatus s;
  s.entry.container_id = "nb";
  s.entry.bytes = 10 * kGiB;
  s.entry.limit_bytes = 30 * kGiB;
  s.used_bytes = used;
  return s;
}

TEST(StatusBurst, WhatAShareBorrowsIsMarked) {
  EXPECT_EQ(used_text(burst_share(25 * kGiB)), "25.0 GiB (15.0 GiB borrowed)");
  EXPECT_EQ(used_text(burst_share(4 * kGiB)), "4.0 GiB");
  EXPECT_EQ(used_text(burst_share(std::nullopt)), "-");
  ShareStatus plain = burst_share(12 * kGiB);
  plain.entry.limit_bytes = 0;
  EXPECT_EQ(borrowed_bytes(plain), 0u) << "without a burst limit nothing is borrowed";
  nlohmann::json j;
  add_burst_json(j, burst_share(25 * kGiB));
  EXPECT_EQ(j.dump(), R"({"borrowed_bytes":16106127360,"limit_bytes":32212254720,"request_bytes":10737418240})");
  nlohmann::json none;
  add_burst_json(none, plain);
  EXPECT_TRUE(none.is_null());
}

TEST(StatusBurst, TheReclaimersLog) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const Inventory inv = test::shipped_machine("a100-40gb-x1.yaml");
  const std::string gpu = inv.gpus[0].uuid;
  reclaim::ReclaimLog log;
  reclaim::record_stop(log, reclaim::ReclaimEvent{1764338400, gpu, "nb", 4242, 25 * kGiB, "trainer"}, "nb@p4242-1");
  log.refused[gpu] = 2;
  log.flags["liar@p7-1"] = reclaim::ReclaimFlag{gpu, "liar", 0, 12 * kGiB, 1764338400};
  EXPECT_EQ(render_reclaims(log, inv, ReclaimerState{1234, "kill"}, true),
            "\nBurst reclaimer: pid 1234 (burst.reclaim: kill)\n"
            "\nMemory lent and taken back (burst.reclaim)\n"
            "  2025-11-28 14:00:00  GPU 0: stopped process 4242 of nb (it held 25.0 GiB) for trainer\n"
            "  GPU 0: 2 request(s) for lent memory refused (burst.reclaim: refuse)\n"
            "\nUsage regions the driver contradicts (flagged; the driver's view decides)\n"
            "  liar on GPU 0: its region says 0 B, the driver sees 12.0 GiB (since 2025-11-28 14:00:00)\n");
  const nlohmann::json j = reclaims_json(log, inv, ReclaimerState{0, "refuse"});
  EXPECT_TRUE(j["reclaimer_pid"].is_null());
  EXPECT_EQ(j["burst_reclaim"], "refuse");
  EXPECT_EQ(j["stopped"], 1);
  EXPECT_EQ(j["refused"], 2);
  EXPECT_EQ(j["events"][0]["gpu_index"], 0);
  EXPECT_EQ(j["flags"][0]["container"], "liar");
  EXPECT_EQ(render_reclaims(reclaim::ReclaimLog{}, inv, ReclaimerState{}, false), "");
  EXPECT_EQ(render_reclaims(reclaim::ReclaimLog{}, inv, ReclaimerState{}, true),
            "\nBurst reclaimer: not running; shares with a limit borrow nothing until one runs (the next start, or "
            "gpufrac gc, starts it)\n");
  EXPECT_EQ(log.share_stopped.at("nb@p4242-1"), 1u);
}

TEST(StatusBurst, SharesOfOneCgroupAreListedWithWhy) {
  const Inventory inv = test::shipped_machine("a100-40gb-x1.yaml");
  const std::string gpu = inv.gpus[0].uuid;
  reclaim::ReclaimLog log;
  log.untold["a@p1-1"] = reclaim::ReclaimUntold{gpu, "a", {"b"}};
  log.untold["b@p2-1"] = reclaim::ReclaimUntold{gpu, "b", {"a"}};
  EXPECT_EQ(render_reclaims(log, inv, ReclaimerState{1234, "kill"}, false),
            "\nShares that share a cgroup (the kernel cannot tell their processes apart: neither borrows, and "
            "nothing is taken back for either)\n"
            "  a on GPU 0: one cgroup with b; its limit is its request\n"
            "  b on GPU 0: one cgroup with a; its limit is its request\n");
  const nlohmann::json j = reclaims_json(log, inv, ReclaimerState{1234, "kill"});
  EXPECT_EQ(j["untold"].dump(), "[{\"container\":\"a\",\"gpu_uuid\":\"" + gpu +
                                    "\",\"with\":[\"b\"]},{\"container\":\"b\","
                                    "\"gpu_uuid\":\"" +
                                    gpu + "\",\"with\":[\"a\"]}]");
}

}  // namespace
}  // namespace gpufrac::cli

namespace gpufrac::cli {
namespace {

TEST(StatusBurst, SwapsAreShownWithTheirBytesAndWhySwapWasNotUsed) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const Inventory inv = test::shipped_machine("a100-40gb-x1.yaml");
  const std::string gpu = inv.gpus[0].uuid;
  ShareStatus s = burst_share(25 * kGiB);
  EXPECT_EQ(swapped_text(s), "");
  s.swapped = ShareStatus::Swapped{25 * kGiB, 1764338400, "trainer"};
  EXPECT_EQ(swapped_text(s),
            "SWAPPED: nb 25.0 GiB in host memory since 2025-11-28 14:00:00, for trainer; it resumes when the GPU has "
            "room for it");
  reclaim::ReclaimLog log;
  reclaim::ReclaimEvent out{1764338400, gpu, "nb", 4242, 25 * kGiB, "trainer"};
  out.action = "swapped out";
  reclaim::record_swap(log, out, "nb@p4242-1");
  reclaim::ReclaimEvent in{1764338460, gpu, "nb", 4242, 25 * kGiB, ""};
  in.action = "swapped in";
  reclaim::record_swap(log, in, "nb@p4242-1");
  reclaim::ReclaimEvent stop{1764338520, gpu, "mps", 77, 2 * kGiB, "trainer"};
  stop.reason = "an MPS share (the driver cannot checkpoint MPS clients)";
  reclaim::record_stop(log, stop, "mps@p77-1");
  EXPECT_EQ(render_reclaims(log, inv, ReclaimerState{1234, "swap"}, false),
            "\nMemory lent and taken back (burst.reclaim)\n"
            "  2025-11-28 14:00:00  GPU 0: swapped out process 4242 of nb (it held 25.0 GiB) for trainer\n"
            "  2025-11-28 14:01:00  GPU 0: swapped in process 4242 of nb (it held 25.0 GiB)\n"
            "  2025-11-28 14:02:00  GPU 0: stopped process 77 of mps (it held 2.0 GiB) for trainer; swap not used: an "
            "MPS share (the driver cannot checkpoint MPS clients)\n");
  const nlohmann::json j = reclaims_json(log, inv, ReclaimerState{1234, "swap"});
  EXPECT_EQ(j["stopped"], 1);
  EXPECT_EQ(j["swapped_out"], 1);
  EXPECT_EQ(j["events"][0]["action"], "swapped out");
  EXPECT_TRUE(j["events"][0]["reason"].is_null());
  EXPECT_EQ(j["events"][2]["reason"], "an MPS share (the driver cannot checkpoint MPS clients)");
}

}  // namespace
}  // namespace gpufrac::cli
