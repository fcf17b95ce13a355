// Multi-GPU shares in the allocator and the ledger (docs/architecture.md "Requests and
// allocation"): N distinct GPUs or none, placement by topology then policy then index, one-line
// refusals that book nothing, and concurrent reservations from many processes that never half-book.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <random>
#include <set>

#include "core/allocator/allocator.hpp"
#include "core/allocator/topology_place.hpp"
#include "core/ledger/ledger.hpp"
#include "core/text.hpp"
#include "ledger_fixture.hpp"
#include "nvml/simulated.hpp"
#include "request_fixture.hpp"

namespace gpufrac {
namespace {

using testing::LedgerTest;

Inventory machine(const std::string& file) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/" + file);
  EXPECT_TRUE(m) << m.error().message;
  return m->inventory;
}

Request req(const Annotations& a) {
  return testing::parsed_request(a, false);
}

// The GPU indices of the grants, "2,3", or the refusal.
std::string placed(const Request& r, const Inventory& inv, const std::vector<LedgerEntry>& live = {},
                   const AllocationConfig& cfg = {}) {
  auto g = allocate_gpus(r, inv, live, cfg);
  if (!g) return g.error().message;
  std::string out;
  for (const auto& x : *g) out += (out.empty() ? "" : ",") + std::to_string(x.gpu_index);
  return out;
}

LedgerEntry booked(const Inventory& inv, const std::string& id, std::uint32_t gpu, std::uint64_t bytes, bool whole) {
  LedgerEntry e;
  e.container_id = id;
  e.device_key = "";
  e.device_uuid = e.gpu_uuid = inv.gpus.at(gpu).uuid;
  e.gpu_index = gpu;
  e.bytes = bytes;
  e.exclusive = whole;
  return e;
}

TEST(MultiGpuAlloc, TwoWholeGpusOnTwoGpuMachine) {
  const Inventory inv = machine("a100-40gb-x2.yaml");
  auto g = allocate_gpus(req({{"gpufrac.io/gpus", "2"}}), inv, {}, {});
  ASSERT_TRUE(g) << g.error().message;
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].gpu_index, 0u);
  EXPECT_EQ((*g)[1].gpu_index, 1u);
  EXPECT_TRUE((*g)[0].exclusive);
  EXPECT_EQ((*g)[1].bytes, inv.gpus[1].memory_bytes);
  EXPECT_EQ((*g)[0].reason, "gpus=2 on GPUs 0,1 (worst link PHB; binpack)");
}

TEST(MultiGpuAlloc, TooManyGpusIsOneLine) {
  const Inventory inv = machine("a100-40gb-x2.yaml");
  EXPECT_EQ(placed(req({{"gpufrac.io/gpus", "3"}}), inv),
            "gpufrac.io/gpus: 3 GPUs asked for and this node has 2; use 1 to 2");
}

TEST(MultiGpuAlloc, HalfOnEachFillsAndTheNextIsRefusedNamingEveryGpu) {
  const Inventory inv = machine("a100-40gb-x2.yaml");
  const Request half = req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction", "0.5"}});
  std::vector<LedgerEntry> live;
  for (int k = 0; k < 2; ++k) {
    auto g = allocate_gpus(half, inv, live, {});
    ASSERT_TRUE(g) << k << ": " << g.error().message;
    ASSERT_EQ(g->size(), 2u);
    for (const auto& x : *g) live.push_back(booked(inv, "c" + std::to_string(k), x.gpu_index, x.bytes, false));
  }
  EXPECT_EQ(placed(half, inv, live),
            "fraction=0.5 gpus=2 needs 2 GPUs and none can take it: GPU 0 0 B free (needs 19.8 GiB), GPU 1 0 B "
            "free (needs 19.8 GiB)");
  live.pop_back();  // one GPU with room is not enough
  EXPECT_EQ(placed(half, inv, live),
            "fraction=0.5 gpus=2 needs 2 GPUs and only 1 can take it: GPU 0 0 B free (needs 19.8 GiB), GPU 1 has "
            "room (19.8 GiB free)");
}

TEST(MultiGpuAlloc, TheDgxTakesAnNvlinkPairOverLowerIndices) {
  const Inventory inv = machine("dgx-8gpu-mixed.yaml");  // GPUs 0-3 shareable, NVLink pairs 0-1 and 2-3
  const Request two = req({{"gpufrac.io/gpus", "2"}});
  EXPECT_EQ(placed(two, inv), "0,1");
  // GPU 0 taken whole: 1,2 are the lowest free indices, 2,3 the NVLink pair.
  const std::vector<LedgerEntry> live{booked(inv, "w", 0, inv.gpus[0].memory_bytes, true)};
  EXPECT_EQ(placed(two, inv, live), "2,3");
  auto g = allocate_gpus(two, inv, live, {});
  ASSERT_TRUE(g);
  EXPECT_EQ((*g)[0].reason, "gpus=2 on GPUs 2,3 (worst link NV12; binpack)");
  // Three GPUs from 1-3: the only set; GPUs in MIG mode never take part.
  EXPECT_EQ(placed(req({{"gpufrac.io/gpus", "3"}}), inv, live), "1,2,3");
  EXPECT_EQ(placed(req({{"gpufrac.io/gpus", "4"}}), inv, live).substr(0, 46),
            "gpus=4 needs 4 GPUs and only 3 can take it: GP");
}

TEST(MultiGpuAlloc, PolicyBreaksTiesBetweenEqualLinks) {
  const Inventory inv = machine("dgx-8gpu-mixed.yaml");
  const Request q = req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction", "0.25"}});
  const std::vector<LedgerEntry> live{booked(inv, "s", 3, 10ull << 30, false)};
  EXPECT_EQ(placed(q, inv, live), "2,3");  // binpack: the pair with the fuller GPU
  AllocationConfig spread;
  spread.policy = Policy::spread;
  EXPECT_EQ(placed(q, inv, live, spread), "0,1");
}

TEST(MultiGpuAlloc, PinnedListsAreTakenAsNamedOrRefused) {
  const Inventory inv = machine("dgx-8gpu-mixed.yaml");
  EXPECT_EQ(placed(req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/gpu", "2,0"}}), inv), "0,2");
  const std::vector<LedgerEntry> live{booked(inv, "w", 0, inv.gpus[0].memory_bytes, true)};
  const std::string r = placed(req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/gpu", "0,2"}}), inv, live);
  EXPECT_EQ(r.find("gpus=2 gpu=0,2 needs 2 GPUs and only 1 can take it: "), 0u) << r;
  EXPECT_EQ(r.substr(r.size() - 26), "(pinned by gpufrac.io/gpu)") << r;
  EXPECT_EQ(
      placed(req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/gpu", "0,GPU-7c7581aa-b6e4-a6a5-e16e-ccdf0127e776"}}), inv),
      "gpufrac.io/gpu: GPU 0 is named twice (GPU-7c7581aa-b6e4-a6a5-e16e-ccdf0127e776); name each GPU once");
}

TEST(MultiGpuAlloc, MaxSharesPerGpuCountsEachGpu) {
  const Inventory inv = machine("a100-40gb-x2.yaml");
  AllocationConfig cfg;
  cfg.max_shares_per_gpu = 2;
  const Request q = req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/memory", "1Gi"}});
  std::vector<LedgerEntry> live{booked(inv, "a", 0, 1ull << 30, false), booked(inv, "b", 0, 1ull << 30, false)};
  const std::string r = placed(q, inv, live, cfg);
  EXPECT_EQ(r.find("memory=1Gi gpus=2 needs 2 GPUs and only 1 can take it: GPU 0 "), 0u) << r;
  live.pop_back();
  EXPECT_EQ(placed(q, inv, live, cfg), "0,1");
}

// best_gpu_set alone: links (worst pair first), then policy, then the lowest indices; the greedy
// search for large nodes agrees with the exhaustive one on pairs and on the DGX's islands.
PlacementInput dgx_like(std::uint32_t count, Policy policy) {
  const std::uint32_t nv = link_distance(GpuLink{"", 12, PcieLink::node});
  const std::uint32_t node = link_distance(GpuLink{"", 0, PcieLink::node});
  const std::uint32_t sys = link_distance(GpuLink{"", 0, PcieLink::sys});
  PlacementInput in;
  in.count = count;
  in.policy = policy;
  for (std::size_t i = 0; i < 8; ++i) {
    in.distance.emplace_back();
    for (std::size_t j = 0; j < 8; ++j)
      in.distance.back().push_back(i == j ? 0 : (i / 2 == j / 2 ? nv : (i / 4 == j / 4 ? node : sys)));
    in.fullness.push_back(0);
  }
  return in;
}

TEST(MultiGpuPlacement, LinksThenPolicyThenIndex) {
  PlacementInput in = dgx_like(2, Policy::binpack);
  EXPECT_EQ(best_gpu_set(in), (std::vector<std::size_t>{0, 1}));
  in.fullness[5] = 400'000;  // binpack: the NVLink pair with the fuller GPU
  EXPECT_EQ(best_gpu_set(in), (std::vector<std::size_t>{4, 5}));
  in.policy = Policy::spread;
  EXPECT_EQ(best_gpu_set(in), (std::vector<std::size_t>{0, 1}));
  in.count = 4;  // one NUMA node's four GPUs beat any set across the sockets
  EXPECT_EQ(best_gpu_set(in), (std::vector<std::size_t>{0, 1, 2, 3}));
  in.count = 9;
  EXPECT_TRUE(best_gpu_set(in).empty());
}

TEST(MultiGpuPlacement, GreedyAgreesWithExhaustive) {
  std::mt19937 rng(31);
  for (int round = 0; round < 200; ++round) {
    PlacementInput in = dgx_like(2 + round % 3, round % 2 ? Policy::spread : Policy::binpack);
    for (auto& f : in.fullness) f = rng() % 4 * 250'000;
    if (in.count == 2)  // pairs: random links
      for (std::size_t i = 0; i < 8; ++i)
        for (std::size_t j = i + 1; j < 8; ++j) in.distance[i][j] = in.distance[j][i] = rng() % 5;
    PlacementInput greedy = in;
    greedy.max_sets = 1;
    EXPECT_EQ(best_gpu_set(greedy), best_gpu_set(in)) << "round " << round;
  }
}

// The ledger: both GPUs or neither, retried alike, released together.
TEST_F(LedgerTest, MultiGpuBooksEveryGpuOrNothing) {
  ReserveArgs a = args("m1", "0.5");
  a.request = req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction", "0.5"}});
  auto b = ledger().reserve(a, inv_, cfg_);
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->grants.size(), 2u);
  auto e = entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].device_key, "gpus/0");
  EXPECT_EQ(e[1].device_key, "gpus/1");
  EXPECT_NE(e[0].gpu_uuid, e[1].gpu_uuid);
  auto again = ledger().reserve(a, inv_, cfg_);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->existing);
  ASSERT_EQ(again->grants.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(again->grants[k].device_uuid, b->grants[k].device_uuid);
    EXPECT_EQ(again->grants[k].bytes, b->grants[k].bytes);
  }
  EXPECT_EQ(entries(), e);
  ReserveArgs one = args("one", "0.5");
  one.request = req({{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "0"}});
  ASSERT_TRUE(ledger().reserve(one, inv_, cfg_));  // GPU 0 now full, GPU 1 half free
  const auto before = entries();
  ReserveArgs c = a;
  c.container_id = "m2";
  auto refused = ledger().reserve(c, inv_, cfg_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "fraction=0.5 gpus=2 needs 2 GPUs and only 1 can take it: GPU 0 0 B free (needs 19.8 GiB), GPU 1 has "
            "room (19.8 GiB free)");
  EXPECT_EQ(entries(), before);
  ASSERT_TRUE(ledger().release("m1"));
  EXPECT_EQ(entries().size(), 1u);
}

TEST_F(LedgerTest, MultiGpuRetryWithAnotherRequestIsRefused) {
  ReserveArgs a = args("m1", "0.5");
  a.request = req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction", "0.25"}});
  ASSERT_TRUE(ledger().reserve(a, inv_, cfg_));
  const auto before = entries();
  a.request = req({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction", "0.5"}});
  auto r = ledger().reserve(a, inv_, cfg_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "container m1 already holds a booking for fraction=0.25 gpus=2; release it before asking for "
            "fraction=0.5 gpus=2");
  EXPECT_EQ(entries(), before);
}

// Processes that reserve random one-, two- and whole-GPU requests at once on one ledger: every
// container ends with all its GPUs or none, on distinct GPUs, and no GPU is booked past its memory
// or has a whole booking beside another.
TEST_F(LedgerTest, ConcurrentMultiGpuReservationsNeverHalfBook) {
  constexpr int kProcs = 24, kEach = 8;
  const Annotations kinds[] = {{{"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction", "0.25"}},
                               {{"gpufrac.io/gpus", "2"}},
                               {{"gpufrac.io/fraction", "0.25"}},
                               {{"gpufrac.io/gpus", "2"}, {"gpufrac.io/memory", "3Gi"}}};
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::mt19937 rng(p);
      for (int i = 0; i < kEach; ++i) {
        ReserveArgs a = args(text::cat("p", p, "-", i), "0.25");
        a.request = **parse_request(kinds[rng() % 4], false);
        (void)ledger().reserve(a, inv_, cfg_);
        if (rng() % 3 == 0) (void)ledger().release(text::cat("p", p, "-", rng() % (i + 1)));
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    ASSERT_EQ(::waitpid(k, &st, 0), k);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  std::map<std::string, std::set<std::string>> gpus_of;
  std::map<std::string, std::string> request_of;
  std::map<std::string, std::uint64_t> bytes_on;
  std::map<std::string, int> shares_on, whole_on;
  for (const auto& e : entries()) {
    EXPECT_TRUE(gpus_of[e.container_id].insert(e.gpu_uuid).second) << e.container_id << " twice on one GPU";
    request_of[e.container_id] = e.request;
    bytes_on[e.gpu_uuid] += e.bytes;
    ++shares_on[e.gpu_uuid];
    whole_on[e.gpu_uuid] += e.exclusive;
  }
  EXPECT_FALSE(gpus_of.empty());
  for (const auto& [id, gpus] : gpus_of)
    EXPECT_EQ(gpus.size(), request_of[id].find("gpus=2") == std::string::npos ? 1u : 2u) << id << " half-booked";
  for (const auto& g : inv_.gpus) {
    EXPECT_LE(bytes_on[g.uuid], g.memory_bytes) << g.index;
    if (whole_on[g.uuid]) EXPECT_EQ(shares_on[g.uuid], 1) << g.index << ": a whole GPU beside another booking";
  }
}

}  // namespace
}  // namespace gpufrac
