#include <gtest/gtest.h>

#include "core/allocator/allocator.hpp"
#include "nvml/simulated.hpp"
#include "request_fixture.hpp"
#include "shipped_machines.hpp"

namespace gpufrac {
namespace {

constexpr std::uint64_t kA100_40 = 40536 * kMiB;    // 39.6 GiB
constexpr std::uint64_t kQuarter40 = 10134 * kMiB;  // fraction_bytes(0.25) = 9.9 GiB

Inventory machine(const std::string& file) {
  return test::shipped_machine(file, true);
}

Request req(const Annotations& a) {
  return testing::parsed_request(a);
}
Request fraction(const std::string& f) {
  return req({{"gpufrac.io/fraction", f}});
}

LedgerEntry on(const Inventory& inv, const std::string& id, std::uint32_t gpu, std::uint64_t bytes,
               bool exclusive = false) {
  LedgerEntry e;
  e.container_id = id;
  e.device_uuid = inv.gpus.at(gpu).uuid;
  e.gpu_uuid = e.device_uuid;
  e.gpu_index = gpu;
  e.bytes = bytes;
  e.exclusive = exclusive;
  return e;
}

LedgerEntry on_mig(const Inventory& inv, const std::string& id, std::uint32_t gpu, std::uint32_t gi) {
  LedgerEntry e = on(inv, id, gpu, 0, true);
  for (const auto& m : inv.gpus.at(gpu).mig_instances)
    if (m.gi_id == gi) {
      e.device_uuid = m.uuid;
      e.bytes = m.memory_bytes;
      e.mig = MigRef{m.gi_id, m.ci_id, m.profile_name};
    }
  return e;
}

std::string refusal(const Request& r, const Inventory& inv, const std::vector<LedgerEntry>& live,
                    const AllocationConfig& cfg = {}) {
  auto g = allocate(r, inv, live, cfg);
  EXPECT_FALSE(g) << g->reason;
  if (g) return "";
  EXPECT_EQ(g.error().kind, ErrorKind::user);
  return g.error().message;
}

Grant grant(const Request& r, const Inventory& inv, const std::vector<LedgerEntry>& live,
            const AllocationConfig& cfg = {}) {
  auto g = allocate(r, inv, live, cfg);
  EXPECT_TRUE(g) << g.error().message;
  return g ? *g : Grant{};
}

TEST(Allocator, BinpackTakesTheFullestGpuThatFits) {
  auto inv = machine("a100-40gb-x2.yaml");
  auto g = grant(fraction("0.25"), inv, {on(inv, "a", 1, 4ull << 30)});
  // The default compute share is the memory share: a quarter of the memory, a quarter of the time.
  EXPECT_EQ(g, (Grant{inv.gpus[1].uuid, 1, inv.gpus[1].uuid, std::nullopt, kQuarter40, false,
                      "binpack: GPU 1 is the fullest GPU with room (4.0 GiB of 39.6 GiB reserved before)", 250'000}));
  EXPECT_EQ(grant(fraction("0.25"), inv, {}).gpu_index, 0u);  // ties: lowest index
}

TEST(Allocator, BinpackSkipsAFullestGpuWithoutRoom) {
  auto inv = machine("a100-40gb-x2.yaml");
  EXPECT_EQ(grant(fraction("0.25"), inv, {on(inv, "a", 0, 36ull << 30), on(inv, "b", 1, 4ull << 30)}).gpu_index, 1u);
}

TEST(Allocator, SpreadTakesTheEmptiest) {
  auto inv = machine("a100-40gb-x2.yaml");
  std::vector<LedgerEntry> live{on(inv, "a", 0, 4ull << 30), on(inv, "b", 1, 8ull << 30)};
  AllocationConfig spread;
  spread.policy = Policy::spread;
  auto g = grant(fraction("0.25"), inv, live, spread);
  EXPECT_EQ(g.gpu_index, 0u);
  EXPECT_EQ(g.reason, "spread: GPU 0 is the emptiest GPU with room (4.0 GiB of 39.6 GiB reserved before)");
  // The request's policy overrides the node's.
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/policy", "spread"}}), inv, live).gpu_index, 0u);
  EXPECT_EQ(
      grant(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/policy", "binpack"}}), inv, live, spread).gpu_index, 1u);
}

TEST(Allocator, RefusalNamesTheNumbers) {
  auto inv = machine("a100-40gb-x2.yaml");
  std::vector<LedgerEntry> live{on(inv, "a", 0, kA100_40 - (4ull << 30)), on(inv, "b", 1, kA100_40 - (2ull << 30))};
  EXPECT_EQ(refusal(req({{"gpufrac.io/memory", "10Gi"}}), inv, live),
            "no GPU has 10.0 GiB free: GPU 0 4.0 GiB, GPU 1 2.0 GiB");
  EXPECT_EQ(refusal(fraction("0.25"), inv, live),
            "no GPU has 9.9 GiB free for fraction=0.25: GPU 0 4.0 GiB, GPU 1 2.0 GiB");
}

TEST(Allocator, EightQuartersFillTwoGpusExactly) {
  auto inv = machine("a100-40gb-x2.yaml");
  std::vector<LedgerEntry> live;
  for (int i = 0; i < 8; ++i) {
    auto g = grant(fraction("0.25"), inv, live);
    EXPECT_EQ(g.gpu_index, i < 4 ? 0u : 1u) << i;
    live.push_back(on(inv, "c" + std::to_string(i), g.gpu_index, g.bytes));
  }
  EXPECT_EQ(refusal(fraction("0.25"), inv, live), "no GPU has 9.9 GiB free for fraction=0.25: GPU 0 0 B, GPU 1 0 B");
}

TEST(Allocator, MemoryLargerThanAGpu) {
  auto inv = machine("a100-40gb-x2.yaml");
  EXPECT_EQ(refusal(req({{"gpufrac.io/memory", "100Gi"}}), inv, {}),
            "no GPU can take memory=100Gi: GPU 0 has 39.6 GiB in all, GPU 1 has 39.6 GiB in all");
}

TEST(Allocator, TooSmallAFraction) {
  auto inv = machine("a100-40gb-x2.yaml");
  EXPECT_EQ(refusal(fraction("0.000001"), inv, {}),
            "no GPU can take fraction=0.000001: GPU 0: fraction=0.000001 is less than 1 MiB, "
            "GPU 1: fraction=0.000001 is less than 1 MiB");
}

TEST(Allocator, DifferentSizedGpusNameEachNeed) {
  auto inv = machine("a100-40gb-x2.yaml");
  inv.gpus[1].memory_bytes = 80ull << 30;
  std::vector<LedgerEntry> live{on(inv, "a", 0, kA100_40), on(inv, "b", 1, 70ull << 30)};
  EXPECT_EQ(refusal(fraction("0.5"), inv, live),
            "no GPU has room for fraction=0.5: GPU 0 0 B free (needs 19.8 GiB), GPU 1 10.0 GiB free (needs 40.0 GiB)");
}

TEST(Allocator, PinByIndexAndUuid) {
  auto inv = machine("a100-40gb-x2.yaml");
  std::vector<LedgerEntry> live{on(inv, "a", 0, 4ull << 30)};
  auto g = grant(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/gpu", "1"}}), inv, live);
  EXPECT_EQ(g.gpu_index, 1u);
  EXPECT_EQ(g.reason, "pinned: GPU 1 (0 B of 39.6 GiB reserved before)");
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/gpu", inv.gpus[1].uuid}}), inv, live).gpu_index,
            1u);
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/gpu", "5"}}), inv, live),
            "gpufrac.io/gpu: GPU 5 is not on this node; use 0, 1 or a UUID that gpufrac info lists");
  EXPECT_EQ(
      refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/gpu", "GPU-00000000-0000-0000-0000-000000000000"}}),
              inv, live),
      "gpufrac.io/gpu: GPU GPU-00000000-0000-0000-0000-000000000000 is not on this node; use 0, 1 or a UUID "
      "that gpufrac info lists");
  live.push_back(on(inv, "b", 1, kA100_40 - (1ull << 30)));
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/gpu", "1"}}), inv, live),
            "no GPU has 9.9 GiB free for fraction=0.25: GPU 1 1.0 GiB (pinned by gpufrac.io/gpu)");
}

TEST(Allocator, WholeGpuNeedsAnEmptyGpuAndBlocksIt) {
  auto inv = machine("a100-40gb-x2.yaml");
  auto g = grant(fraction("1"), inv, {on(inv, "a", 0, 1ull << 30)});
  EXPECT_EQ(g, (Grant{inv.gpus[1].uuid, 1, inv.gpus[1].uuid, std::nullopt, kA100_40, true,
                      "whole GPU 1: no other bookings", kWholeGpuComputePpm}));
  EXPECT_TRUE(grant(req({{"gpufrac.io/memory", "40536"}}), inv, {}).exclusive);  // memory == total
  EXPECT_EQ(refusal(fraction("1"), inv, {on(inv, "a", 0, 1 << 20), on(inv, "b", 1, 1 << 20), on(inv, "c", 1, 1 << 20)}),
            "no GPU is free for a whole GPU: GPU 0 has 1 share, GPU 1 has 2 shares");
  std::vector<LedgerEntry> whole{on(inv, "w0", 0, kA100_40, true)};
  EXPECT_EQ(grant(fraction("0.25"), inv, whole).gpu_index, 1u);
  whole.push_back(on(inv, "w1", 1, kA100_40, true));
  EXPECT_EQ(refusal(fraction("0.25"), inv, whole),
            "no GPU can take fraction=0.25: GPU 0 is used whole by w0, GPU 1 is used whole by w1");
}

TEST(Allocator, OvercommitRaisesCapacity) {
  auto inv = machine("a100-40gb-x2.yaml");
  AllocationConfig cfg;
  cfg.overcommit = 1.5;
  std::vector<LedgerEntry> live;
  for (int i = 0; i < 6; ++i) {
    auto g = grant(fraction("0.25"), inv, live, cfg);
    EXPECT_EQ(g.gpu_index, 0u) << i;
    live.push_back(on(inv, "c" + std::to_string(i), 0, g.bytes));
  }
  EXPECT_EQ(grant(fraction("0.25"), inv, live, cfg).gpu_index, 1u);
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/gpu", "0"}}), inv, live, cfg),
            "no GPU has 9.9 GiB free for fraction=0.25: GPU 0 0 B (pinned by gpufrac.io/gpu)");
}

TEST(Allocator, MaxSharesPerGpu) {
  auto inv = machine("a100-40gb-x2.yaml");
  AllocationConfig cfg;
  cfg.max_shares_per_gpu = 2;
  std::vector<LedgerEntry> live{on(inv, "a", 0, 1 << 20), on(inv, "b", 0, 1 << 20)};
  EXPECT_EQ(grant(fraction("0.25"), inv, live, cfg).gpu_index, 1u);
  live.push_back(on(inv, "c", 1, 1 << 20));
  live.push_back(on(inv, "d", 1, 1 << 20));
  EXPECT_EQ(refusal(fraction("0.25"), inv, live, cfg),
            "no GPU can take fraction=0.25: GPU 0 has 2 shares (max-shares-per-gpu 2), "
            "GPU 1 has 2 shares (max-shares-per-gpu 2)");
  cfg.max_shares_per_gpu = 0;  // unlimited
  for (int i = 0; i < 40; ++i) live.push_back(on(inv, "x" + std::to_string(i), 0, 1 << 20));
  EXPECT_EQ(grant(fraction("0.25"), inv, live, cfg).gpu_index, 0u);
}

TEST(Allocator, MigModeGpusAreNeverShared) {
  auto inv = machine("a100-80gb-mig.yaml");
  EXPECT_EQ(refusal(fraction("0.25"), inv, {}), "no GPU can take fraction=0.25: GPU 0 is in MIG mode");
  auto dgx = machine("dgx-8gpu-mixed.yaml");
  std::vector<LedgerEntry> live;
  for (std::uint32_t i = 0; i < 4; ++i) live.push_back(on(dgx, "w" + std::to_string(i), i, 80ull << 30, true));
  EXPECT_EQ(refusal(fraction("0.25"), dgx, live),
            "no GPU can take fraction=0.25: GPU 0 is used whole by w0, GPU 1 is used whole by w1, GPU 2 is used whole "
            "by w2, GPU 3 is used whole by w3, GPU 4 is in MIG mode, GPU 5 is in MIG mode, GPU 6 is in MIG mode, "
            "GPU 7 is in MIG mode");
}

TEST(Allocator, MigProfileTakesAnIdleInstance) {
  auto inv = machine("a100-80gb-mig.yaml");
  const auto& gpu = inv.gpus[0];
  auto g = grant(req({{"gpufrac.io/mig-profile", "1g.10gb"}}), inv, {});
  EXPECT_EQ(g, (Grant{"MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e", 0, gpu.uuid, MigRef{9, 0, "1g.10gb"}, 9728 * kMiB,
                      true, "idle MIG instance 1g.10gb on GPU 0 gi 9 ci 0"}));
  EXPECT_EQ(grant(req({{"gpufrac.io/mig-profile", "1g.10gb"}}), inv, {on_mig(inv, "a", 0, 9)}).mig->gi, 10u);
  EXPECT_EQ(
      refusal(req({{"gpufrac.io/mig-profile", "1g.10gb"}}), inv, {on_mig(inv, "a", 0, 9), on_mig(inv, "b", 0, 10)}),
      "no idle MIG instance of profile 1g.10gb: GPU 0 gi 9 ci 0 in use by a, GPU 0 gi 10 ci 0 in use by b");
  EXPECT_EQ(grant(req({{"gpufrac.io/mig-profile", "3c.3g.40gb"}}), inv, {}).mig->gi, 1u);
  EXPECT_EQ(refusal(req({{"gpufrac.io/mig-profile", "1g.20gb"}}), inv, {}),
            "no MIG instance of profile 1g.20gb exists; GPU 0: 3g.40gb, 2g.20gb, 1g.10gb x2");
}

TEST(Allocator, MigInstanceWithoutCapNodesIsNotGivenOut) {
  auto inv = machine("a100-80gb-mig.yaml");
  for (auto& m : inv.gpus[0].mig_instances) m.cap_nodes.clear();
  EXPECT_EQ(refusal(req({{"gpufrac.io/mig-profile", "2g.20gb"}}), inv, {}),
            "no idle MIG instance of profile 2g.20gb: GPU 0 gi 5 ci 0 has no capability device nodes (the host's "
            "/proc/driver/nvidia-caps/mig-minors does not list it)");
}

TEST(Allocator, MigProfileWithPins) {
  auto dgx = machine("dgx-8gpu-mixed.yaml");
  auto g = grant(req({{"gpufrac.io/mig-profile", "1g.10gb"}}), dgx, {});
  EXPECT_EQ(g.gpu_index, 4u);
  EXPECT_EQ(g.mig->gi, 9u);
  g = grant(req({{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpufrac.io/gpu", "6"}}), dgx, {});
  EXPECT_EQ(g.gpu_index, 6u);
  EXPECT_EQ(g.mig->gi, 7u);
  EXPECT_EQ(refusal(req({{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpufrac.io/gpu", "0"}}), dgx, {}),
            "GPU 0 is not in MIG mode; mig-profile=1g.10gb needs one");
  EXPECT_EQ(refusal(req({{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpufrac.io/gpu", "7"}}), dgx, {}),
            "no MIG instance of profile 1g.10gb exists; GPU 7: no instances");
  auto plain = machine("a100-40gb-x2.yaml");
  EXPECT_EQ(refusal(req({{"gpufrac.io/mig-profile", "1g.10gb"}}), plain, {}),
            "no GPU is in MIG mode; mig-profile=1g.10gb needs one");
}

TEST(Allocator, MigServesFractionsBySmallestFit) {
  auto inv = machine("a100-80gb-mig.yaml");
  AllocationConfig cfg;
  cfg.mig_serves_fractions = true;
  auto g = grant(fraction("0.25"), inv, {}, cfg);  // 2 of 8 slices: 2g.20gb, not 3g.40gb
  EXPECT_EQ(g.device_uuid, "MIG-f78d0c02-39a7-012e-4893-522a41e2242b");
  EXPECT_EQ(g.bytes, 19968 * kMiB);
  EXPECT_TRUE(g.exclusive);
  EXPECT_EQ(g.reason,
            "mig-serves-fractions: smallest idle MIG instance holding fraction=0.25 (2 of 8 memory slices): 2g.20gb "
            "on GPU 0 gi 5 ci 0");
  EXPECT_EQ(grant(fraction("0.1"), inv, {}, cfg).mig->gi, 9u);  // 1 slice
  EXPECT_EQ(grant(fraction("0.1"), inv, {on_mig(inv, "a", 0, 9)}, cfg).mig->gi, 10u);
  EXPECT_EQ(grant(fraction("0.5"), inv, {}, cfg).mig->gi, 1u);  // 4 slices
  g = grant(req({{"gpufrac.io/memory", "8Gi"}}), inv, {}, cfg);
  EXPECT_EQ(g.mig->gi, 9u);
  EXPECT_EQ(g.reason,
            "mig-serves-fractions: smallest idle MIG instance holding memory=8Gi (9.5 GiB): 1g.10gb on GPU 0 "
            "gi 9 ci 0");
  EXPECT_EQ(grant(req({{"gpufrac.io/memory", "10Gi"}}), inv, {}, cfg).mig->gi, 5u);  // 9728 MiB < 10 GiB
  EXPECT_EQ(refusal(fraction("0.6"), inv, {}, cfg),
            "no GPU can take fraction=0.6: GPU 0 is in MIG mode; no idle MIG instance holds fraction=0.6");
  cfg.mig_serves_fractions = false;
  EXPECT_EQ(refusal(fraction("0.25"), inv, {}, cfg), "no GPU can take fraction=0.25: GPU 0 is in MIG mode");
}

TEST(Allocator, SharesComeBeforeMigWhenBothCould) {
  auto dgx = machine("dgx-8gpu-mixed.yaml");
  AllocationConfig cfg;
  cfg.mig_serves_fractions = true;
  EXPECT_FALSE(grant(fraction("0.25"), dgx, {}, cfg).mig.has_value());
}

TEST(Allocator, BookingsOnUnknownDevicesAreIgnored) {
  auto inv = machine("a100-40gb-x2.yaml");
  LedgerEntry ghost = on(inv, "ghost", 0, kA100_40, true);
  ghost.device_uuid = "GPU-11111111-1111-1111-1111-111111111111";
  EXPECT_EQ(grant(fraction("1"), inv, {ghost}).gpu_index, 0u);
}

TEST(Allocator, NoGpu) {
  EXPECT_EQ(refusal(fraction("0.5"), Inventory{}, {}), "this node has no GPU");
}

}  // namespace
}  // namespace gpufrac
