// Compute shares: the limit file's arbiter line, the arbiter file on the host
// (limits/host/arbiter_file.hpp) and the lease protocol (limits/shim/lease*.c, arbiter*.c) over one
// shared mapping, with several gf_lease clients standing in for processes.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gf_arbiter.h"
#include "limits/host/arbiter_file.hpp"
#include "limits/host/limit_file.hpp"

namespace {

using namespace gpufrac;
using namespace gpufrac::limits;

constexpr const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";

TEST(LimitsFile, ArbiterLineFollowsTheComputeLine) {
  LimitFile f{"abc", "/run/gpufrac/usage", {{kGpu, 10, 250000, ComputeMode::fair, ComputePriority::normal, 0x1f}}};
  const std::string text = render_limit_file(f);
  EXPECT_EQ(text, std::string("version 1\ncontainer abc\nregion /run/gpufrac/usage\ndevice ") + kGpu + " 10\ncompute " +
                      kGpu + " 250000 fair normal\narbiter " + kGpu + " 000000000000001f\n");
  auto back = parse_limit_file(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, f);
}

TEST(LimitsFile, RefusesBadArbiterLines) {
  const std::string head = std::string("version 1\nregion /u\ndevice ") + kGpu + " 1\n";
  const std::string compute = std::string("compute ") + kGpu + " 5 fair normal\n";
  const std::string line = std::string("arbiter ") + kGpu + " ";
  const std::pair<std::string, std::string> cases[] = {
      {head + line + "00000000000000ff\n",
       "limit file: line 4: arbiter: no compute line for this UUID before it; accepted: compute <uuid> ... first"},
      {head + compute + line + "0000000000000000\n",
       "limit file: line 5: arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line"},
      {head + compute + line + "ff\n",
       "limit file: line 5: arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line"},
      {head + compute + line + "000000000000000g\n",
       "limit file: line 5: arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line"},
      {head + compute + line + "00000000000000ff x\n",
       "limit file: line 5: arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line"},
      {head + compute + line + "00000000000000ff\n" + line + "00000000000000fe\n",
       "limit file: line 6: arbiter: UUID listed twice"},
  };
  for (const auto& [text, message] : cases) {
    auto f = parse_limit_file(text);
    ASSERT_FALSE(f) << text;
    EXPECT_EQ(f.error().message, message) << text;
  }
}

class ArbiterFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-arbiter-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/compute/" + kGpu;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, path_;
};

TEST_F(ArbiterFileTest, CreatedFullyAllocatedAndKept) {
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), sizeof(gpufrac_arbiter));
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  EXPECT_GE(static_cast<std::size_t>(st.st_blocks) * 512, sizeof(gpufrac_arbiter)) << "no hole";
  ASSERT_TRUE(attach_arbiter_slot(path_, "c1", 300000, ComputeMode::fair, ComputePriority::normal));
  ASSERT_TRUE(ensure_arbiter(path_, kGpu)) << "a valid arbiter is kept";
  auto v = read_arbiter(path_);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->gpu_uuid, kGpu);
  ASSERT_EQ(v->slots.size(), 1u);
  EXPECT_EQ(v->slots[0].key, "c1");
}

TEST_F(ArbiterFileTest, AnInvalidFileIsReplaced) {
  std::filesystem::create_directories(dir_ + "/compute");
  ASSERT_EQ(::close(::open(path_.c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  auto bad = read_arbiter(path_);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "compute arbiter " + path_ + ": 0 bytes; accepted: a regular file of " +
                                     std::to_string(sizeof(gpufrac_arbiter)) + " bytes (arbiter version 1)");
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  EXPECT_TRUE(read_arbiter(path_));
}

TEST_F(ArbiterFileTest, SlotsBySetupAndRelease) {
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  auto t1 = attach_arbiter_slot(path_, "c1", 300000, ComputeMode::strict, ComputePriority::high);
  auto t2 = attach_arbiter_slot(path_, "c2", 700000, ComputeMode::fair, ComputePriority::normal);
  ASSERT_TRUE(t1 && t2);
  EXPECT_NE(*t1, 0u);
  EXPECT_NE(*t1, *t2);
  auto again = attach_arbiter_slot(path_, "c1", 400000, ComputeMode::fair, ComputePriority::normal);
  ASSERT_TRUE(again);
  auto v = read_arbiter(path_);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->slots.size(), 2u) << "the same key keeps its slot";
  EXPECT_EQ(v->slots[0].weight_ppm, 400000u);
  EXPECT_EQ(v->slots[1].mode, ComputeMode::fair);
  EXPECT_EQ(*release_arbiter_slots(path_, "c1"), 1u);
  EXPECT_EQ(*release_arbiter_slots(path_, "c1"), 0u) << "idempotent";
  EXPECT_EQ(read_arbiter(path_)->slots.size(), 1u);
  EXPECT_EQ(*release_arbiter_slots(dir_ + "/compute/none", "c2"), 0u) << "no arbiter: nothing to free";
  auto swept = sweep_arbiter(path_, {}, 3600);
  ASSERT_TRUE(swept);
  EXPECT_TRUE(swept->empty()) << "young slots stay";
  swept = sweep_arbiter(path_, {"c2"}, 0);
  EXPECT_TRUE(swept->empty()) << "booked slots stay";
  swept = sweep_arbiter(path_, {}, 0);
  EXPECT_EQ(*swept, std::vector<std::string>{"c2"});
}

TEST_F(ArbiterFileTest, EverySlotTaken) {
  ASSERT_TRUE(ensure_arbiter(path_, kGpu));
  for (int i = 0; i < GPUFRAC_ARBITER_SLOTS; i++)
    ASSERT_TRUE(attach_arbiter_slot(path_, "c" + std::to_string(i), 1000, ComputeMode::fair, ComputePriority::normal));
  auto full = attach_arbiter_slot(path_, "one-more", 1000, ComputeMode::fair, ComputePriority::normal);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().message, "compute arbiter " + path_ +
                                      ": all 256 container slots of this GPU are taken; accepted: at most 256 "
                                      "containers with a compute share per GPU");
}

// The protocol over one anonymous shared mapping; each gf_lease is one process.
class LeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* m = ::mmap(nullptr, sizeof(gpufrac_arbiter), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    a_ = static_cast<gpufrac_arbiter*>(m);
    gpufrac_arbiter_params p;
    gf_arbiter_default_params(&p);
    p.lease_ms = 30;
    p.grace_ms = 20;
    gf_arbiter_format(a_, kGpu, &p);
  }
  void TearDown() override { ::munmap(a_, sizeof(gpufrac_arbiter)); }
  gf_lease client(const char* key, std::uint32_t weight, std::uint32_t flags = 0) {
    const std::uint64_t token = 0x1000 + std::hash<std::string>{}(key) % 1000;
    EXPECT_GE(gf_arbiter_setup(a_, key, token, weight, flags, 1), 0);
    gf_lease l{};
    char err[256];
    EXPECT_EQ(gf_lease_init(&l, a_, token, weight, flags & GPUFRAC_ARBITER_STRICT, flags & GPUFRAC_ARBITER_HIGH, 7, err,
                            sizeof err),
              0)
        << err;
    return l;
  }
  static void no_drain(void*) {}
  gpufrac_arbiter* a_ = nullptr;
};

TEST_F(LeaseTest, AloneItClaimsAndRenews) {
  gf_lease l = client("a", 500000);
  ASSERT_EQ(gf_lease_acquire(&l), 0);
  const std::uint64_t w = l.word;
  EXPECT_EQ(gpufrac_lease_holder(w), 1u);
  EXPECT_EQ(gpufrac_lease_claimed(w), 1u);
  EXPECT_TRUE(gf_lease_admits(&l, gf_now_ns()));
  EXPECT_EQ(gf_lease_state(&l, gf_now_ns()), GF_LEASE_HOLD);
  EXPECT_EQ(gf_lease_end(&l, no_drain, nullptr), 1) << "nobody else runnable: renewed";
  EXPECT_NE(l.word, w);
  EXPECT_EQ(a_->slots[0].leases, 1u) << "the time so far is charged";
}

TEST_F(LeaseTest, HandsOverToTheRunnableSlotBehindIt) {
  gf_lease a = client("a", 500000), b = client("b", 500000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  __atomic_store_n(&a_->slots[1].seen_ns, gf_now_ns(), __ATOMIC_SEQ_CST);  // b waits
  __atomic_store_n(&a_->slots[1].vtime, a_->slots[0].vtime, __ATOMIC_SEQ_CST);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  int drained = 0;
  EXPECT_EQ(gf_lease_end(
                &a, [](void* n) { ++*static_cast<int*>(n); }, &drained),
            0);
  EXPECT_EQ(drained, 1);
  const std::uint64_t w = __atomic_load_n(&a_->lease, __ATOMIC_SEQ_CST);
  EXPECT_EQ(gpufrac_lease_holder(w), 2u) << "designated to b";
  EXPECT_EQ(gpufrac_lease_claimed(w), 0u);
  EXPECT_EQ(gf_lease_acquire(&b), 0);
  EXPECT_EQ(gpufrac_lease_holder(b.word), 2u);
  EXPECT_EQ(gf_lease_state(&a, gf_now_ns()), GF_LEASE_LOST);
}

TEST_F(LeaseTest, AnExpiredHolderIsTakenOverAndCharged) {
  gf_lease a = client("a", 500000), b = client("b", 500000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  gf_lease_busy(&a, 1);  // waits for its GPU work: not idle, only expiry ends it (a is "killed" here)
  const std::uint32_t deadline = gpufrac_lease_deadline(a.word);
  ASSERT_EQ(gf_lease_acquire(&b), 0);
  const auto taken_ms = static_cast<std::uint32_t>(gf_now_ns() / 1000000);
  EXPECT_GT(static_cast<std::int32_t>(taken_ms - deadline), 20) << "not before deadline + grace";
  EXPECT_EQ(gpufrac_lease_holder(b.word), 2u);
  EXPECT_EQ(a_->slots[0].leases, 1u) << "the taker charged a's lease";
  EXPECT_EQ(gf_lease_state(&a, gf_now_ns()), GF_LEASE_LOST);
}

TEST_F(LeaseTest, AnIdleHolderIsTakenOver) {
  gf_lease a = client("a", 500000), b = client("b", 500000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  const std::uint32_t deadline = gpufrac_lease_deadline(a.word);
  ASSERT_EQ(gf_lease_acquire(&b), 0);  // a never admits: idle after idle_us (2 ms)
  EXPECT_LT(static_cast<std::int32_t>(static_cast<std::uint32_t>(gf_now_ns() / 1000000) - deadline), 0)
      << "before a's deadline";
  EXPECT_EQ(gpufrac_lease_holder(b.word), 2u);
}

TEST_F(LeaseTest, StrictIsPacedAtItsWeight) {
  gf_lease s = client("s", 250000, GPUFRAC_ARBITER_STRICT);
  ASSERT_EQ(gf_lease_acquire(&s), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(4));
  EXPECT_EQ(gf_lease_end(&s, no_drain, nullptr), 0) << "strict never renews";
  const std::uint64_t charged = a_->slots[0].charged_ns, nb = a_->slots[0].not_before_ns;
  // From its start, the charge over the weight, less one lease it may make good (the first).
  EXPECT_EQ(nb, s.start_ns - charged + charged * 4);
  EXPECT_EQ(gpufrac_lease_holder(__atomic_load_n(&a_->lease, __ATOMIC_SEQ_CST)), 0u) << "free";
  ASSERT_EQ(gf_lease_acquire(&s), 0);
  EXPECT_GE(s.start_ns, nb) << "not before its pacing";
}

TEST_F(LeaseTest, HighPriorityPreemptsWithinItsCredit) {
  gf_lease batch = client("batch", 900000), probe = client("probe", 100000, GPUFRAC_ARBITER_HIGH);
  ASSERT_EQ(gf_lease_acquire(&batch), 0);
  gf_lease_busy(&batch, 1);
  std::thread t([&] { EXPECT_EQ(gf_lease_acquire(&probe), 0); });
  while (__atomic_load_n(&a_->preempt, __ATOMIC_SEQ_CST) == 0) std::this_thread::yield();
  EXPECT_EQ(a_->preempt, 2u);
  EXPECT_FALSE(gf_lease_admits(&batch, gf_now_ns()));
  EXPECT_EQ(gf_lease_state(&batch, gf_now_ns()), GF_LEASE_END) << "at its next kernel boundary";
  gf_lease_busy(&batch, 0);
  EXPECT_EQ(gf_lease_end(&batch, no_drain, nullptr), 0);
  t.join();
  EXPECT_EQ(gpufrac_lease_holder(probe.word), 2u);
  EXPECT_EQ(a_->preempt, 0u) << "cleared by the claimant";
  // Past its credit (100 ms of its own time ahead of vclock) it waits its turn like anyone.
  a_->slots[1].vtime = a_->vclock + 100'000'000'000ull / 100000 + 1;
  EXPECT_EQ(gf_lease_high_eligible(&batch, 1), 0);
}

TEST_F(LeaseTest, PickIsStartTimeFairQueuing) {
  gf_lease a = client("a", 100000);
  client("b", 100000);
  client("c", 100000, GPUFRAC_ARBITER_HIGH);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  const std::uint64_t now = gf_now_ns();
  a_->slots[1].seen_ns = now;
  a_->slots[1].vtime = a_->vclock + 50;
  EXPECT_EQ(gf_lease_pick(&a, now), 1) << "b waits";
  EXPECT_EQ(gf_lease_pick(&a, now + 20'000'000), -1) << "b's heartbeat is stale: not runnable";
  a_->slots[2].seen_ns = now;
  a_->slots[2].vtime = a_->vclock + 500;
  EXPECT_EQ(gf_lease_pick(&a, now), 2) << "high priority within its credit first";
  a_->slots[2].flags = 0;
  EXPECT_EQ(gf_lease_pick(&a, now), 1) << "then the least virtual time";
  a_->slots[0].seen_ns = now;  // another process of a waits (seen after a's start)
  a_->slots[0].vtime = a_->vclock;
  EXPECT_EQ(gf_lease_pick(&a, now), 0);
}

TEST_F(LeaseTest, ChargesShowInTheWindowOfWholeSeconds) {
  client("a", 500000);
  const std::uint64_t t = 1000ull * 1000000000ull + 500000000ull;  // second 1000
  gf_arbiter_charge(a_, 0, 20000000, t, 500000, 0);
  gf_arbiter_charge(a_, 0, 30000000, t + 100000000, 500000, 0);
  EXPECT_EQ(a_->slots[0].vtime - a_->vclock, 50000000ull * 1000 / 500000);
  EXPECT_EQ(gf_arbiter_window_ns(a_, 0, t), 0u) << "the current second is not whole yet";
  EXPECT_EQ(gf_arbiter_window_ns(a_, 0, t + 1000000000ull), 50000000u);
  EXPECT_EQ(gf_arbiter_window_ns(a_, 0, t + 10000000000ull), 50000000u);
  EXPECT_EQ(gf_arbiter_window_ns(a_, 0, t + 11000000000ull), 0u) << "older than 10 s";
}

TEST_F(LeaseTest, GarbageInTheFileUpsetsNothing) {
  gf_lease a = client("a", 500000);
  a_->slot_high_water = 1u << 30;
  a_->params = {0, 0, 0, 0, 0, 0, 0, ~0u};
  a_->lease = gpufrac_lease_word(1023, 1, 5, static_cast<std::uint32_t>(gf_now_ns() / 1000000) + 100000);
  a_->preempt = 0xffffffffu;
  a_->slots[0].weight_ppm = 0;
  EXPECT_EQ(gf_lease_acquire(&a), 0) << "a holder index past the slots is nobody";
  EXPECT_EQ(gf_lease_state(&a, gf_now_ns()), GF_LEASE_HOLD) << "an impossible preemption request is cleared";
  EXPECT_EQ(a_->preempt, 0u);
  a_->lease = gpufrac_lease_word(2, 1, 9, static_cast<std::uint32_t>(gf_now_ns() / 1000000) + 100000);
  a.word = 0;
  EXPECT_EQ(gf_lease_acquire(&a), 0) << "a deadline no process could have written counts as expired";
  EXPECT_EQ(gf_lease_pick(&a, gf_now_ns()), -1);
  gpufrac_arbiter_params p;
  gf_arbiter_params(a_, &p);
  EXPECT_EQ(p.lease_ms, 1u);
  EXPECT_EQ(p.credit_ms, 10000u);
  EXPECT_EQ(p.runnable_us, 2 * p.heartbeat_us);
}

}  // namespace
