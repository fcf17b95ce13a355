// The allocator books the GPU's time beside its memory (docs/architecture.md "Compute share"): the
// default weight (the memory share, or none with allocation.compute unmanaged), the fit by memory
// AND time, the one-line refusals, and the paths that never carry compute (MIG instances).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "core/allocator/allocator.hpp"
#include "core/allocator/load.hpp"
#include "core/request/compute_share.hpp"
#include "nvml/simulated.hpp"
#include "request_fixture.hpp"
#include "shipped_machines.hpp"

namespace gpufrac {
namespace {

constexpr std::uint64_t kA100_40 = 40536 * kMiB;

Inventory machine(const std::string& file) {
  return test::shipped_machine(file, true);
}

Request req(const Annotations& a) {
  return testing::parsed_request(a);
}

// A live share of `bytes` and `compute` ppm on a GPU.
LedgerEntry on(const Inventory& inv, const std::string& id, std::uint32_t gpu, std::uint64_t bytes,
               std::uint32_t compute, bool exclusive = false) {
  LedgerEntry e;
  e.container_id = id;
  e.device_uuid = inv.gpus.at(gpu).uuid;
  e.gpu_uuid = e.device_uuid;
  e.gpu_index = gpu;
  e.bytes = bytes;
  e.exclusive = exclusive;
  e.compute_ppm = compute;
  return e;
}

Grant grant(const Request& r, const Inventory& inv, const std::vector<LedgerEntry>& live,
            const AllocationConfig& cfg = {}) {
  auto g = allocate(r, inv, live, cfg);
  EXPECT_TRUE(g) << g.error().message;
  return g ? *g : Grant{};
}

std::string refusal(const Request& r, const Inventory& inv, const std::vector<LedgerEntry>& live,
                    const AllocationConfig& cfg = {}) {
  auto g = allocate(r, inv, live, cfg);
  EXPECT_FALSE(g) << g->reason;
  if (g) return "";
  EXPECT_EQ(g.error().kind, ErrorKind::user);
  return g.error().message;
}

TEST(ComputeAlloc, TheDefaultIsTheMemoryShare) {
  const auto inv = machine("a100-40gb-x2.yaml");
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.25"}}), inv, {}).compute_ppm, 250'000u);
  // The memory actually booked: 0.3 of 40536 MiB is 12160 MiB (whole MiB), 299'980 ppm.
  auto g = grant(req({{"gpufrac.io/fraction", "0.3"}}), inv, {});
  EXPECT_EQ(g.bytes, 12160 * kMiB);
  EXPECT_EQ(g.compute_ppm, 299'980u);
  EXPECT_EQ(grant(req({{"gpufrac.io/memory", "4Gi"}}), inv, {}).compute_ppm, 101'045u);  // 4096 / 40536, down
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "1"}}), inv, {}).compute_ppm, kWholeGpuComputePpm);
  EXPECT_EQ(grant(req({{"gpufrac.io/memory", "40536"}}), inv, {}).compute_ppm, kWholeGpuComputePpm);
  g = grant(req({{"gpufrac.io/fraction", "0.25"}}), inv, {});
  EXPECT_EQ(g.compute_mode, ComputeMode::fair);
  EXPECT_EQ(g.priority, ComputePriority::normal);
  // A mode or priority alone rides on the default weight.
  g = grant(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute-mode", "strict"}}), inv, {});
  EXPECT_EQ(g.compute_ppm, 250'000u);
  EXPECT_EQ(g.compute_mode, ComputeMode::strict);
}

TEST(ComputeAlloc, OvercommitDividesTheDefault) {
  const auto inv = machine("a100-40gb-x2.yaml");
  AllocationConfig cfg;
  cfg.overcommit = 2.0;
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.25"}}), inv, {}, cfg).compute_ppm, 125'000u);
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "1"}}), inv, {}, cfg).compute_ppm, kWholeGpuComputePpm);
  // An explicit request is what it says, whatever the overcommit.
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute", "25"}}), inv, {}, cfg).compute_ppm,
            250'000u);
  EXPECT_EQ(default_compute_ppm(1, 1ull << 50), 1u);  // at least 1
  EXPECT_EQ(default_compute_ppm(0, kA100_40), 0u);
  EXPECT_EQ(default_compute_ppm(kA100_40, kA100_40), kWholeGpuComputePpm);
}

TEST(ComputeAlloc, ExplicitComputeModeAndPriority) {
  const auto inv = machine("a100-40gb-x2.yaml");
  auto g = grant(req({{"gpufrac.io/fraction", "0.25"},
                      {"gpufrac.io/compute", "30"},
                      {"gpufrac.io/compute-mode", "strict"},
                      {"gpufrac.io/priority", "high"}}),
                 inv, {});
  EXPECT_EQ(g.bytes, 10134 * kMiB);
  EXPECT_EQ(g.compute_ppm, 300'000u);
  EXPECT_EQ(g.compute_mode, ComputeMode::strict);
  EXPECT_EQ(g.priority, ComputePriority::high);
  g = grant(req({{"gpufrac.io/compute", "30"}}), inv, {});  // compute alone: 0.3 of the memory too
  EXPECT_EQ(g.bytes, 12160 * kMiB);
  EXPECT_EQ(g.compute_ppm, 300'000u);
  EXPECT_FALSE(g.exclusive);
  g = grant(req({{"gpufrac.io/compute", "100"}}), inv, {});
  EXPECT_TRUE(g.exclusive);
  EXPECT_EQ(g.compute_ppm, kWholeGpuComputePpm);
  // A whole GPU asked to hold back: it is still used whole, with the weight it asked for.
  g = grant(req({{"gpufrac.io/fraction", "1"}, {"gpufrac.io/compute", "40"}, {"gpufrac.io/compute-mode", "strict"}}),
            inv, {});
  EXPECT_TRUE(g.exclusive);
  EXPECT_EQ(g.compute_ppm, 400'000u);
}

TEST(ComputeAlloc, UnmanagedBooksOnlyWhatIsAsked) {
  const auto inv = machine("a100-40gb-x2.yaml");
  AllocationConfig cfg;
  cfg.compute = ComputeManagement::unmanaged;
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.25"}}), inv, {}, cfg).compute_ppm, 0u);
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "1"}}), inv, {}, cfg).compute_ppm, 0u);
  EXPECT_EQ(grant(req({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/compute", "10"}}), inv, {}, cfg).compute_ppm,
            100'000u);
  // Explicit shares still count against each other; shares without one take no time.
  std::vector<LedgerEntry> live{on(inv, "a", 0, 1ull << 30, 900'000), on(inv, "b", 1, 1ull << 30, 950'000)};
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.5"}}), inv, live, cfg).compute_ppm, 0u);
  EXPECT_EQ(refusal(req({{"gpufrac.io/compute", "20"}}), inv, live, cfg),
            "no GPU has 20 % of its time free for compute=20: GPU 0 10 %, GPU 1 5 %");
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute-mode", "strict"}}), inv, {}, cfg),
            "gpufrac.io/compute-mode: needs a compute share, and allocation.compute is unmanaged on this node; add "
            "gpufrac.io/compute");
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/priority", "high"}}), inv, {}, cfg),
            "gpufrac.io/priority: needs a compute share, and allocation.compute is unmanaged on this node; add "
            "gpufrac.io/compute");
}

TEST(ComputeAlloc, AGpuFitsByMemoryAndTime) {
  const auto inv = machine("a100-40gb-x2.yaml");
  // GPU 0 is the fuller by memory (binpack's choice) but has 20 % of its time left.
  std::vector<LedgerEntry> live{on(inv, "a", 0, 8ull << 30, 800'000), on(inv, "b", 1, 1ull << 30, 100'000)};
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.1"}}), inv, live).gpu_index, 0u);  // 10 % fits there
  EXPECT_EQ(grant(req({{"gpufrac.io/fraction", "0.1"}, {"gpufrac.io/compute", "30"}}), inv, live).gpu_index, 1u);
  // Exactly full: 100 % is booked, not one ppm more.
  std::vector<LedgerEntry> full{on(inv, "a", 0, 1ull << 30, 300'000), on(inv, "b", 0, 1ull << 30, 300'000),
                                on(inv, "c", 0, 1ull << 30, 300'000)};
  const Request pinned10 = req({{"gpufrac.io/memory", "1Gi"}, {"gpufrac.io/compute", "10"}, {"gpufrac.io/gpu", "0"}});
  EXPECT_EQ(grant(pinned10, inv, full).compute_ppm, 100'000u);
  full.push_back(on(inv, "d", 0, 1ull << 30, 100'000));
  EXPECT_EQ(
      refusal(req({{"gpufrac.io/memory", "1Gi"}, {"gpufrac.io/compute", "1"}, {"gpufrac.io/gpu", "0"}}), inv, full),
      "no GPU has 1 % of its time free for compute=1: GPU 0 0 % (pinned by gpufrac.io/gpu)");
  // Whole GPUs and max-shares-per-gpu keep their words beside the time.
  AllocationConfig two;
  two.max_shares_per_gpu = 2;
  std::vector<LedgerEntry> mixed{on(inv, "w", 0, kA100_40, kWholeGpuComputePpm, true),
                                 on(inv, "b", 1, 1ull << 30, 850'000)};
  EXPECT_EQ(refusal(req({{"gpufrac.io/compute", "30"}}), inv, mixed, two),
            "no GPU has 30 % of its time free for compute=30: GPU 0 is used whole by w, GPU 1 15 %");
  mixed.push_back(on(inv, "c", 1, 1ull << 30, 0));
  EXPECT_EQ(refusal(req({{"gpufrac.io/compute", "30"}}), inv, mixed, two),
            "no GPU can take compute=30: GPU 0 is used whole by w, GPU 1 has 2 shares (max-shares-per-gpu 2)");
}

TEST(ComputeAlloc, RefusalsNameWhatIsShort) {
  auto inv = machine("a100-40gb-x2.yaml");
  // Time short everywhere for the brief's example.
  std::vector<LedgerEntry> busy{on(inv, "a", 0, 1ull << 30, 800'000), on(inv, "b", 1, 1ull << 30, 1'000'000)};
  EXPECT_EQ(refusal(req({{"gpufrac.io/compute", "30"}}), inv, busy),
            "no GPU has 30 % of its time free for compute=30: GPU 0 20 %, GPU 1 0 %");
  // The default share refused by time: said so.
  std::vector<LedgerEntry> heavy{on(inv, "a", 0, 1ull << 30, 900'000), on(inv, "b", 1, 1ull << 30, 900'000)};
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}}), inv, heavy),
            "no GPU has 25 % of its time free for fraction=0.25 (its default compute share): GPU 0 10 %, GPU 1 10 %");
  // Memory short wherever it is short: the words from before compute shares, even where time is too.
  std::vector<LedgerEntry> packed{on(inv, "a", 0, kA100_40 - (1ull << 30), 950'000),
                                  on(inv, "b", 1, kA100_40 - (2ull << 30), 950'000)};
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute", "30"}}), inv, packed),
            "no GPU has 9.9 GiB free for fraction=0.25: GPU 0 1.0 GiB, GPU 1 2.0 GiB");
  // One GPU short of memory, the other of time: each says which.
  std::vector<LedgerEntry> split{on(inv, "a", 0, kA100_40 - (1ull << 30), 100'000),
                                 on(inv, "b", 1, 1ull << 30, 800'000)};
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute", "30"}}), inv, split),
            "no GPU has room for fraction=0.25 compute=30: GPU 0 1.0 GiB free (needs 9.9 GiB), GPU 1 20 % of its "
            "time free (needs 30 %)");
  // Default shares of a memory amount differ by GPU size: each GPU says what it needs.
  inv.gpus[1].memory_bytes = 2 * kA100_40;
  EXPECT_EQ(refusal(req({{"gpufrac.io/memory", "10Gi"}}), inv, heavy),
            "no GPU has the time for memory=10Gi (its default compute share): GPU 0 10 % free (needs 25.2614 %), "
            "GPU 1 10 % free (needs 12.6307 %)");
}

TEST(ComputeAlloc, MigInstancesCarryNoCompute) {
  const auto inv = machine("a100-80gb-mig.yaml");
  AllocationConfig cfg;
  cfg.mig_serves_fractions = true;
  auto g = grant(req({{"gpufrac.io/mig-profile", "1g.10gb"}}), inv, {}, cfg);
  EXPECT_EQ(g.compute_ppm, 0u);
  g = grant(req({{"gpufrac.io/fraction", "0.25"}}), inv, {}, cfg);  // served by an instance: its time is its own
  EXPECT_TRUE(g.mig.has_value());
  EXPECT_EQ(g.compute_ppm, 0u);
  // On MIG compute is a size: 30 % of the 7g's 98 SMs is 30 SMs, so the 3g.40gb (42 SMs) and not
  // the 2g.20gb (28) that fraction 0.25 alone takes; the MIG device owns its SMs, so the grant
  // carries no weight for the time-slicing arbiter.
  g = grant(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute", "30"}}), inv, {}, cfg);
  ASSERT_TRUE(g.mig.has_value());
  EXPECT_EQ(g.mig->profile, "3g.40gb");
  EXPECT_EQ(g.compute_ppm, 0u);
  EXPECT_EQ(
      g.reason,
      "mig-serves-fractions: smallest idle MIG instance holding fraction=0.25 compute=30 (42 of 98 SMs, 39.2 GiB): "
      "3g.40gb on GPU 0 gi 1 ci 0");
  // A mode or a priority is about time-slicing: never served by a MIG device.
  EXPECT_EQ(refusal(req({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/priority", "high"}}), inv, {}, cfg),
            "no GPU can take fraction=0.25: GPU 0 is in MIG mode");
  EXPECT_EQ(refusal(req({{"gpufrac.io/compute", "25"}, {"gpufrac.io/compute-mode", "strict"}}), inv, {}, cfg),
            "no GPU can take compute=25: GPU 0 is in MIG mode");
  MigConfig dynamic;
  dynamic.mode = MigMode::dynamic;
  EXPECT_TRUE(dynamic_mig_applies(req({{"gpufrac.io/fraction", "0.25"}}), inv, cfg, dynamic));
  EXPECT_TRUE(dynamic_mig_applies(req({{"gpufrac.io/compute", "25"}}), inv, cfg, dynamic));
  EXPECT_FALSE(
      dynamic_mig_applies(req({{"gpufrac.io/compute", "25"}, {"gpufrac.io/priority", "high"}}), inv, cfg, dynamic));
}

// Random shares arrive and leave on two GPUs: the time booked on a GPU never passes 10^6 ppm, and
// with default shares only (any overcommit) time never refuses a share that memory takes.
TEST(ComputeAlloc, RandomBookingsNeverOverbookTime) {
  const auto inv = machine("a100-40gb-x2.yaml");
  std::mt19937 rng(20261126);
  for (double overcommit : {1.0, 1.5, 4.0}) {
    for (bool explicit_compute : {false, true}) {
      AllocationConfig cfg;
      cfg.overcommit = overcommit;
      cfg.max_shares_per_gpu = 0;
      std::vector<LedgerEntry> live;
      int granted = 0;
      for (int step = 0; step < 3000; ++step) {
        if (!live.empty() && rng() % 3 == 0) {
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(rng() % live.size()));
          continue;
        }
        Annotations a;
        if (rng() % 2 == 0)
          a["gpufrac.io/fraction"] = format_fraction(1 + static_cast<Ppm>(rng() % 500'000));
        else
          a["gpufrac.io/memory"] = std::to_string(1 + rng() % 16384);
        if (explicit_compute && rng() % 2 == 0) a["gpufrac.io/compute"] = std::to_string(1 + rng() % 60);
        const Request r = req(a);
        auto g = allocate(r, inv, live, cfg);
        if (!g) {
          EXPECT_TRUE(explicit_compute || g.error().message.find("time") == std::string::npos) << g.error().message;
          continue;
        }
        ++granted;
        LedgerEntry e = on(inv, "c" + std::to_string(step), g->gpu_index, g->bytes, g->compute_ppm, g->exclusive);
        live.push_back(e);
        const Load load = compute_load(inv, live);
        for (const auto& gpu : inv.gpus) ASSERT_LE(load.of(gpu.uuid).compute, kWholeGpuComputePpm) << step;
      }
      EXPECT_GT(granted, 500) << overcommit;
    }
  }
}

}  // namespace
}  // namespace gpufrac
