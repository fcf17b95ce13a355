// The shim's pure logic (limits/shim: grammar helpers, /proc parsing, pointer table, array
// estimate, region protocol), linked as the static library gpufrac_limits_logic.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gf_array.h"
#include "gf_config.h"
#include "gf_proc.h"
#include "gf_region.h"
#include "gf_table.h"

namespace {

TEST(ShimUuid, ParsesAndFormats) {
  const char* text = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";
  uint8_t b[16];
  ASSERT_EQ(gf_uuid_parse(text, strlen(text), b), 0);
  EXPECT_EQ(b[0], 0x89);
  EXPECT_EQ(b[15], 0x2c);
  char out[64];
  gf_uuid_format(b, "MIG-", out, sizeof out);
  EXPECT_STREQ(out, "MIG-894e9a6d-f600-b098-3d59-138988473c2c");
  const char* upper = "MIG-894E9A6D-F600-B098-3D59-138988473C2C";
  uint8_t c[16];
  ASSERT_EQ(gf_uuid_parse(upper, strlen(upper), c), 0);
  EXPECT_EQ(memcmp(b, c, 16), 0);
  for (const char* bad : {"GPU-894e9a6d-f600-b098-3d59-138988473c2", "GPU-894e9a6df600-b098-3d59-138988473c2cc",
                          "XYZ-894e9a6d-f600-b098-3d59-138988473c2c", "GPU-894e9a6d-f600-b098-3d59-138988473c2g",
                          "MIG-GPU-894e9a6d-f600-b098-3d59-1389884/1/0"}) {
    EXPECT_EQ(gf_uuid_parse(bad, strlen(bad), c), -1) << bad;
  }
}

TEST(ShimProcStat, ParsesAfterTheLastParenthesis) {
  const char* text = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n";
  gf_proc_stat st{};
  ASSERT_EQ(gf_proc_stat_parse(text, strlen(text), &st), 0);
  EXPECT_EQ(st.state, 'S');
  EXPECT_EQ(st.start, 987654u);
  EXPECT_EQ(gf_proc_stat_parse("42 (x) S 1 2", 12, &st), -1);
  gf_proc_stat self{};
  ASSERT_EQ(gf_proc_stat_read("/proc/self/stat", &self), 0);
  EXPECT_EQ(gf_proc_liveness("/proc", static_cast<uint64_t>(getpid()), self.start), GF_ALIVE);
  EXPECT_EQ(gf_proc_liveness("/proc", static_cast<uint64_t>(getpid()), self.start + 1), GF_DEAD);
  EXPECT_EQ(gf_proc_liveness("/proc", static_cast<uint64_t>(getpid()), 0), GF_ALIVE);
  EXPECT_EQ(gf_proc_liveness("/proc", 0, 0), GF_DEAD);
}

TEST(ShimPtrTable, InsertFindRemove) {
  gf_table t{};
  for (uint64_t k = 0; k < 20000; k++) ASSERT_EQ(gf_table_insert(&t, 0x7f0000000000ull + k * 512, k), 0);
  ASSERT_NE(t.levels[1], nullptr) << "20000 keys spill past level 0";
  uint64_t v = 0;
  for (uint64_t k = 0; k < 20000; k++) {
    ASSERT_EQ(gf_table_find(&t, 0x7f0000000000ull + k * 512, &v), 1);
    ASSERT_EQ(v, k);
  }
  for (uint64_t k = 0; k < 20000; k++) ASSERT_EQ(gf_table_remove(&t, 0x7f0000000000ull + k * 512, &v), 1);
  EXPECT_EQ(gf_table_remove(&t, 0x7f0000000000ull, &v), 0) << "removed twice";
  EXPECT_EQ(gf_table_find(&t, 0x7f0000000000ull, &v), 0);
  EXPECT_EQ(gf_table_insert(&t, 0, 5), 0) << "key 0 (a null handle) is storable";
  EXPECT_EQ(gf_table_remove(&t, 0, &v), 1);
  EXPECT_EQ(v, 5u);
  gf_table_forget(&t);
  EXPECT_EQ(t.levels[0], nullptr);
}

TEST(ShimPtrTable, TombstonesAreReusedWithoutGrowing) {
  gf_table t{};
  uint64_t v;
  for (int round = 0; round < 100000; round++) {
    ASSERT_EQ(gf_table_insert(&t, 0x1000ull * (round % 7 + 1) + round * 0x100000ull, 1), 0);
    ASSERT_EQ(gf_table_remove(&t, 0x1000ull * (round % 7 + 1) + round * 0x100000ull, &v), 1);
  }
  EXPECT_EQ(t.levels[1], nullptr) << "alloc/free churn stays in level 0";
  gf_table_forget(&t);
}

TEST(ShimPtrTable, ConcurrentThreads) {
  gf_table t{};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; i++) {
    threads.emplace_back([&, i] {
      uint64_t v;
      for (uint64_t k = 0; k < 50000; k++) {
        const uint64_t key = (k * 4 + i) * 256 + 0x7f0000000000ull;
        if (gf_table_insert(&t, key, k) != 0) errors++;
        if (k % 3 == 0 && (gf_table_remove(&t, key, &v) != 1 || v != k)) errors++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  uint64_t v, present = 0;
  for (uint64_t k = 0; k < 200000; k++) present += gf_table_find(&t, k * 256 + 0x7f0000000000ull, &v);
  EXPECT_EQ(present, 4u * (50000 - 16667));
  gf_table_forget(&t);
}

TEST(ShimArrayEstimate, ExactBytes) {
  EXPECT_EQ(gf_array_bytes(1024, 768, 0, 0x20, 4, 0, 1), 1024u * 768 * 16);  // float4 2D
  EXPECT_EQ(gf_array_bytes(1000, 0, 0, 0x01, 1, 0, 1), 1000u);               // uint8 1D
  EXPECT_EQ(gf_array_bytes(64, 32, 16, 0x10, 2, 0, 1), 64u * 32 * 16 * 4);   // half2 3D
  EXPECT_EQ(gf_array_bytes(256, 256, 0, 0x01, 1, 0, 3), 65536u + 16384 + 4096);
  EXPECT_EQ(gf_array_bytes(8, 0, 0, 0x01, 1, 0, 6), 8u + 4 + 2 + 1 + 1 + 1);           // levels end at 1 element
  EXPECT_EQ(gf_array_bytes(64, 64, 8, 0x01, 1, 0x01, 2), 64u * 64 * 8 + 32 * 32 * 8);  // layers are not halved
  EXPECT_EQ(gf_array_bytes(64, 64, 8, 0x01, 1, 0, 2), 64u * 64 * 8 + 32 * 32 * 4);     // depth is
  EXPECT_EQ(gf_array_bytes(32, 32, 6, 0x20, 1, 0x04, 1), 32u * 32 * 6 * 4);            // cubemap
  EXPECT_EQ(gf_array_bytes(64, 64, 0, 0x91, 4, 0, 1), 16u * 16 * 8);                   // BC1: 8 B per 4x4 block
  EXPECT_EQ(gf_array_bytes(64, 64, 0, 0x9d, 4, 0, 1), 16u * 16 * 16);                  // BC7: 16 B per block
  EXPECT_EQ(gf_array_bytes(1920, 1080, 0, 0xb0, 3, 0, 1), 1920u * 1080 * 2);           // NV12
  EXPECT_EQ(gf_array_bytes(100, 100, 0, 0x7777, 2, 0, 1), 100u * 100 * 8);             // unknown: 4 B/channel
  EXPECT_EQ(gf_array_bytes(4096, 4096, 0, 0x20, 4, 0x40, 1), 0u);                      // sparse
  EXPECT_EQ(gf_array_bytes(SIZE_MAX, SIZE_MAX, 0, 0x20, 4, 0, 1), UINT64_MAX);         // saturates
}

std::unique_ptr<gpufrac_region> zero_region() {
  auto r = std::make_unique<gpufrac_region>();
  std::memset(r.get(), 0, sizeof *r);
  return r;
}

TEST(ShimRegionProtocol, InitialisesAZeroRegionAndRefusesOthers) {
  auto r = zero_region();
  char err[256];
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0);
  EXPECT_EQ(r->magic, GPUFRAC_REGION_MAGIC);
  EXPECT_EQ(r->region_size, sizeof(gpufrac_region));
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0) << "idempotent";
  r->version = 7;
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), -1);
  EXPECT_STREQ(err, "region version 7; accepted: 2");
  auto other = zero_region();
  other->magic = 0x12345678;
  ASSERT_EQ(gf_region_init(other.get(), err, sizeof err), -1);
  EXPECT_STREQ(err, "wrong magic 0x12345678; accepted: 0x52465047 (gpufrac usage region)");
}

TEST(ShimRegionProtocol, ReserveSumRelease) {
  auto r = zero_region();
  char err[256];
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0);
  const uint64_t a = gpufrac_owner(1001, 5, GPUFRAC_SLOT_OWNED), b = gpufrac_owner(1002, 6, GPUFRAC_SLOT_OWNED);
  int ia = gf_slot_claim(r.get(), a), ib = gf_slot_claim(r.get(), b);
  EXPECT_EQ(ia, 0);
  EXPECT_EQ(ib, 1);
  uint64_t in_use = 0;
  EXPECT_EQ(gf_region_reserve(r.get(), &r->slots[ia], 2, 600, 1000, &in_use, nullptr), 0);
  EXPECT_EQ(gf_region_reserve(r.get(), &r->slots[ib], 2, 500, 1000, &in_use, nullptr), -1);
  EXPECT_EQ(in_use, 600u);
  EXPECT_EQ(r->slots[ib].used[2], 0u) << "rolled back";
  EXPECT_EQ(gf_region_reserve(r.get(), &r->slots[ib], 2, 400, 1000, &in_use, nullptr), 0);
  EXPECT_EQ(gf_region_sum(r.get(), 2), 1000u);
  EXPECT_EQ(gf_region_reserve(r.get(), &r->slots[ib], 2, 1001, 1000, &in_use, nullptr), -1) << "alone over the limit";
  gf_region_release(r.get(), &r->slots[ia], 2, 600, nullptr);
  EXPECT_EQ(gf_region_sum(r.get(), 2), 400u);
  EXPECT_EQ(gf_slot_claim(r.get(), a), ia) << "the same process after exec takes its old slot";
  EXPECT_EQ(r->slots[ia].used[2], 0u);
}

TEST(ShimRegionProtocol, RacingReservationsNeverExceedTheLimit) {
  auto r = zero_region();
  char err[256];
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0);
  constexpr uint64_t kLimit = 1000000, kChunk = 7;
  std::atomic<uint64_t> granted{0};
  std::vector<std::thread> threads;
  for (uint64_t i = 0; i < 8; i++) {
    threads.emplace_back([&, i] {
      int s = gf_slot_claim(r.get(), gpufrac_owner(2000 + i, 1, GPUFRAC_SLOT_OWNED));
      uint64_t in_use, mine = 0;
      gf_usage_cache cache{};  // odd threads decide with the full sum every time, even ones cache
      for (int refused = 0; refused < 100;) {
        if (gf_region_reserve(r.get(), &r->slots[s], 0, kChunk, kLimit, &in_use, i % 2 ? nullptr : &cache) == 0) {
          mine += kChunk;
        } else {
          refused++;
        }
      }
      granted += mine;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(granted.load(), kLimit);
  EXPECT_GT(granted.load(), kLimit - kChunk * 8);
  EXPECT_EQ(gf_region_sum(r.get(), 0), granted.load());
}

TEST(ShimRegionProtocol, ACacheServesOnlyWhileNoOtherSlotChanged) {
  auto r = zero_region();
  char err[256];
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0);
  int ia = gf_slot_claim(r.get(), gpufrac_owner(1001, 5, GPUFRAC_SLOT_OWNED));
  int ib = gf_slot_claim(r.get(), gpufrac_owner(1002, 6, GPUFRAC_SLOT_OWNED));
  gf_usage_cache ca{}, cb{};
  uint64_t in_use = 0;
  ASSERT_EQ(gf_region_reserve(r.get(), &r->slots[ia], 1, 300, 1000, &in_use, &ca), 0);
  EXPECT_EQ(ca.valid, 1u << 1);
  EXPECT_EQ(ca.changes, r->usage_changes) << "filled at the count its own change left";
  ASSERT_EQ(gf_region_reserve(r.get(), &r->slots[ia], 1, 300, 1000, &in_use, &ca), 0);
  EXPECT_EQ(ca.changes, r->usage_changes) << "its own change keeps it current";
  ASSERT_EQ(gf_region_reserve(r.get(), &r->slots[ib], 1, 300, 1000, &in_use, &cb), 0);
  EXPECT_NE(ca.changes, r->usage_changes) << "another slot changed";
  EXPECT_EQ(gf_region_reserve(r.get(), &r->slots[ia], 1, 200, 1000, &in_use, &ca), -1)
      << "the cache said 0 elsewhere; the other slot now holds 300";
  EXPECT_EQ(in_use, 900u);
  EXPECT_EQ(gf_region_usage(r.get(), &r->slots[ia], 1, &ca), 900u);
  gf_region_release(r.get(), &r->slots[ib], 1, 300, &cb);
  EXPECT_EQ(gf_region_usage(r.get(), &r->slots[ia], 1, &ca), 600u) << "a release elsewhere is seen too";
  EXPECT_EQ(gf_region_usage(r.get(), nullptr, 1, nullptr), 600u);
  ASSERT_EQ(gf_region_reserve(r.get(), &r->slots[ia], 0, 10, 1000, &in_use, &ca), 0);
  EXPECT_EQ(ca.valid, (1u << 0) | (1u << 1)) << "a device filled at the current count keeps the others";
  r->slots[ib].used[1] = 50;        // a change made but not yet counted: no cache may be trusted with it...
  gf_region_count_change(r.get());  // ...until it is counted, which every writer does
  EXPECT_EQ(gf_region_usage(r.get(), &r->slots[ia], 1, &ca), 650u);
  gf_usage_cache other_slot = ca;
  EXPECT_EQ(gf_region_usage(r.get(), &r->slots[ib], 1, &other_slot), 650u) << "a cache is bound to its slot";
}

TEST(ShimRegionProtocol, ReclaimAndTakeoverAreCountedChanges) {
  auto r = zero_region();
  char err[256];
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0);
  const uint64_t a = gpufrac_owner(1001, 5, GPUFRAC_SLOT_OWNED);
  int ia = gf_slot_claim(r.get(), a);
  int ib = gf_slot_claim(r.get(), gpufrac_owner(1002, 6, GPUFRAC_SLOT_OWNED));
  gf_usage_cache cb{};
  uint64_t in_use = 0;
  ASSERT_EQ(gf_region_reserve(r.get(), &r->slots[ia], 0, 400, 1000, &in_use, nullptr), 0);
  EXPECT_EQ(gf_region_usage(r.get(), &r->slots[ib], 0, &cb), 400u);
  ASSERT_EQ(gf_slot_claim(r.get(), a), ia) << "its image after exec";
  EXPECT_EQ(gf_region_usage(r.get(), &r->slots[ib], 0, &cb), 0u) << "the takeover zeroed and counted";
  ASSERT_EQ(gf_region_reserve(r.get(), &r->slots[ia], 0, 400, 1000, &in_use, nullptr), 0);
  EXPECT_EQ(gf_region_usage(r.get(), &r->slots[ib], 0, &cb), 400u);
  r->slots[ia].owner = gpufrac_owner(0, 0, GPUFRAC_SLOT_RECLAIMING);  // pid 0: always dead
  EXPECT_EQ(gf_region_reclaim(r.get(), gpufrac_owner(1002, 6, 0), GF_CHECK_SIGNAL, "/proc"), 1u);
  EXPECT_EQ(gf_region_usage(r.get(), &r->slots[ib], 0, &cb), 0u) << "the reclaim zeroed and counted";
}

TEST(ShimRegionProtocol, ReclaimsDeadOwnersAndDeadReclaimers) {
  char dir[] = "/tmp/gpufrac-proc.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = dir;
  auto stat_file = [&](int pid, char state, int start) {
    mkdir((root + "/" + std::to_string(pid)).c_str(), 0755);
    FILE* f = fopen((root + "/" + std::to_string(pid) + "/stat").c_str(), "w");
    fprintf(f, "%d (p) %c 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, state, start);
    fclose(f);
  };
  stat_file(10, 'S', 100);
  stat_file(11, 'Z', 100);
  auto r = zero_region();
  char err[256];
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0);
  const uint64_t owners[] = {gpufrac_owner(10, 100, GPUFRAC_SLOT_OWNED), gpufrac_owner(11, 100, GPUFRAC_SLOT_OWNED),
                             gpufrac_owner(12, 100, GPUFRAC_SLOT_RECLAIMING), gpufrac_owner(10, 99, GPUFRAC_SLOT_OWNED),
                             gpufrac_owner(10, 100, GPUFRAC_SLOT_RECLAIMING)};
  for (unsigned i = 0; i < 5; i++) {
    ASSERT_EQ(gf_slot_claim(r.get(), owners[i]), static_cast<int>(i));
    r->slots[i].used[0] = 1u << i;
  }
  EXPECT_EQ(gf_region_reclaim(r.get(), gpufrac_owner(99, 1, 0), GF_CHECK_PROC, root.c_str()), 3u);
  EXPECT_EQ(r->slots[0].owner, owners[0]) << "alive";
  EXPECT_EQ(r->slots[4].owner, owners[4]) << "a live reclaimer is left alone";
  EXPECT_EQ(gf_region_sum(r.get(), 0), 1u + 16);
  EXPECT_EQ(gf_slot_claim(r.get(), gpufrac_owner(13, 1, GPUFRAC_SLOT_OWNED)), 1) << "freed slots are reused first";
  std::string cmd = "rm -rf " + root;
  ASSERT_EQ(system(cmd.c_str()), 0);
}

TEST(ShimRegionProtocol, ShimCheckUsesSignalsAndProc) {
  auto r = zero_region();
  char err[256];
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0);
  gf_proc_stat me{}, parent{};
  ASSERT_EQ(gf_proc_stat_read("/proc/self/stat", &me), 0);
  ASSERT_EQ(gf_proc_stat_read(("/proc/" + std::to_string(getppid()) + "/stat").c_str(), &parent), 0);
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  const uint64_t owners[] = {gpufrac_owner(static_cast<uint64_t>(getppid()), parent.start, GPUFRAC_SLOT_OWNED),
                             gpufrac_owner(static_cast<uint64_t>(getppid()), parent.start + 1, GPUFRAC_SLOT_OWNED),
                             gpufrac_owner(static_cast<uint64_t>(child), 1, GPUFRAC_SLOT_OWNED)};
  for (unsigned i = 0; i < 3; i++) {
    ASSERT_EQ(gf_slot_claim(r.get(), owners[i]), static_cast<int>(i));
    r->slots[i].used[0] = 10;
  }
  const uint64_t self = gpufrac_owner(static_cast<uint64_t>(getpid()), me.start, 0);
  EXPECT_EQ(gf_region_reclaim(r.get(), self, GF_CHECK_SIGNAL, "/proc"), 1u) << "only the exited child";
  EXPECT_EQ(gf_region_reclaim(r.get(), self, GF_CHECK_BOTH, "/proc"), 1u) << "then the reused pid";
  EXPECT_EQ(r->slots[0].owner, owners[0]);
  EXPECT_EQ(gf_region_sum(r.get(), 0), 10u);
}

TEST(ShimRegionProtocol, FullRegionRefusesAClaim) {
  auto r = zero_region();
  char err[256];
  ASSERT_EQ(gf_region_init(r.get(), err, sizeof err), 0);
  for (int i = 0; i < GPUFRAC_MAX_SLOTS; i++) ASSERT_EQ(gf_slot_claim(r.get(), gpufrac_owner(i + 1, 1, 1)), i);
  EXPECT_EQ(gf_slot_claim(r.get(), gpufrac_owner(5000, 1, 1)), -1);
  EXPECT_EQ(r->slot_high_water, static_cast<uint32_t>(GPUFRAC_MAX_SLOTS));
}

}  // namespace
