// The lease protocol (limits/shim/lease*.c, arbiter*.c; gpufrac/arbiter_abi.h) over one pair of
// shared mappings (the slots file and the lease file), with several gf_lease clients standing in for
// processes.
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gf_arbiter.h"

namespace {

constexpr const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";

class LeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* a = ::mmap(nullptr, sizeof(gpufrac_arbiter), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    void* s = ::mmap(nullptr, sizeof(gpufrac_arbiter_slots), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(a, MAP_FAILED);
    ASSERT_NE(s, MAP_FAILED);
    void* t = ::mmap(nullptr, sizeof(gpufrac_arbiter_lane) * GPUFRAC_ARBITER_SLOTS, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(t, MAP_FAILED);
    m_ = {static_cast<gpufrac_arbiter*>(a), static_cast<gpufrac_arbiter_slots*>(s)};
    m_.table = static_cast<gpufrac_arbiter_lane*>(t);  // every slot's lane file in one array
    gpufrac_arbiter_params p;
    gf_arbiter_default_params(&p);
    p.lease_ms = 30;
    p.grace_ms = 20;
    gf_arbiter_slots_format(m_.slots, kGpu, &p);
    gf_arbiter_format(m_.lease);
  }
  void TearDown() override {
    ::munmap(m_.table, sizeof(gpufrac_arbiter_lane) * GPUFRAC_ARBITER_SLOTS);
    gf_arbiter_unmap(&m_);
  }
  gf_lease client(const char* key, std::uint32_t weight, std::uint32_t flags = 0) {
    const std::uint64_t token = 0x1000 + std::hash<std::string>{}(key) % 1000;
    EXPECT_GE(gf_arbiter_setup(&m_, key, token, weight, flags, 1), 0);
    gf_lease l{};
    char err[256];
    EXPECT_EQ(gf_lease_init(&l, &m_, token, 7, err, sizeof err), 0) << err;
    return l;
  }
  gpufrac_arbiter_lane& lane(unsigned i) { return m_.table[i]; }
  static void no_drain(void*) {}
  gf_arb m_{};
};

TEST_F(LeaseTest, AloneItClaimsSoloAndRenews) {
  gf_lease l = client("a", 500000);
  ASSERT_EQ(gf_lease_acquire(&l), 0);
  const std::uint64_t w = l.word;
  EXPECT_EQ(gpufrac_lease_holder(w), 1u);
  EXPECT_EQ(gpufrac_lease_claimed(w), 1u);
  EXPECT_EQ(l.solo, 1) << "nobody else runnable, no high-priority share: solo";
  EXPECT_TRUE(gf_lease_admits(&l, gf_now_ns()));
  EXPECT_EQ(gf_lease_state(&l, gf_now_ns()), GF_LEASE_HOLD);
  EXPECT_EQ(gf_lease_end(&l, no_drain, nullptr), 1) << "nobody else runnable: renewed";
  EXPECT_NE(l.word, w);
  EXPECT_EQ(l.solo, 1);
  EXPECT_EQ(lane(0).leases, 1u) << "the time so far is charged";
}

TEST_F(LeaseTest, NotSoloBesideACompetitorOrAHighPriorityShare) {
  gf_lease a = client("a", 500000);
  client("b", 500000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  a.placed = 1;  // a process that already joined the queue at a lease end: its own charges place it
  __atomic_store_n(&lane(1).seen_ns, gf_now_ns(), __ATOMIC_SEQ_CST);                     // b waits
  __atomic_store_n(&lane(1).vtime, lane(0).vtime + 1'000'000'000ull, __ATOMIC_SEQ_CST);  // far behind a
  EXPECT_EQ(gf_lease_end(&a, no_drain, nullptr), 1) << "renewed: b is behind in virtual time";
  EXPECT_EQ(a.solo, 0) << "but gated: b is runnable";
  __atomic_store_n(&lane(1).seen_ns, 0, __ATOMIC_SEQ_CST);  // b went idle
  EXPECT_EQ(gf_lease_end(&a, no_drain, nullptr), 1);
  EXPECT_EQ(a.solo, 1) << "solo again within one lease of the competitor going idle";
  client("h", 100000, GPUFRAC_ARBITER_HIGH);
  EXPECT_EQ(gf_lease_end(&a, no_drain, nullptr), 1);
  EXPECT_EQ(a.solo, 0) << "a high-priority share, even idle, needs the in-flight bound";
}

TEST_F(LeaseTest, HandsOverToTheRunnableSlotBehindIt) {
  gf_lease a = client("a", 500000), b = client("b", 500000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  __atomic_store_n(&lane(1).seen_ns, gf_now_ns(), __ATOMIC_SEQ_CST);  // b waits
  __atomic_store_n(&lane(1).vtime, lane(0).vtime, __ATOMIC_SEQ_CST);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  // b's heartbeat again: on a loaded machine the sleep may outlast runnable_us (10 ms).
  __atomic_store_n(&lane(1).seen_ns, gf_now_ns(), __ATOMIC_SEQ_CST);
  int drained = 0;
  EXPECT_EQ(gf_lease_end(
                &a, [](void* n) { ++*static_cast<int*>(n); }, &drained),
            0);
  EXPECT_EQ(drained, 1);
  const std::uint64_t w = __atomic_load_n(&m_.lease->lease, __ATOMIC_SEQ_CST);
  EXPECT_EQ(gpufrac_lease_holder(w), 2u) << "designated to b";
  EXPECT_EQ(gpufrac_lease_claimed(w), 0u);
  EXPECT_EQ(gf_lease_acquire(&b), 0);
  EXPECT_EQ(gpufrac_lease_holder(b.word), 2u);
  EXPECT_EQ(gf_lease_state(&a, gf_now_ns()), GF_LEASE_LOST);
}

TEST_F(LeaseTest, AProcessStartedFromALaneRewrittenBackJoinsTheQueueAtItsFirstLeaseEnd) {
  gf_lease a = client("a", 500000);
  client("b", 500000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  a.my_vt -= 120'000'000ull;  // its lane said 60 s of its own time less when the process started
  __atomic_store_n(&lane(1).vtime, lane(0).vtime, __ATOMIC_SEQ_CST);  // b level with a's lane as it was
  __atomic_store_n(&lane(1).seen_ns, gf_now_ns(), __ATOMIC_SEQ_CST);  // b waits
  EXPECT_EQ(gf_lease_end(&a, no_drain, nullptr), 0) << "handed over: a joined the queue at b's place";
  EXPECT_EQ(a.placed, 1);
  EXPECT_EQ(gpufrac_lease_holder(__atomic_load_n(&m_.lease->lease, __ATOMIC_SEQ_CST)), 2u) << "designated to b";
}

TEST_F(LeaseTest, AnExpiredHolderIsTakenOverAndCharged) {
  gf_lease a = client("a", 500000), b = client("b", 500000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  gf_lease_busy(&a, 1, 0);  // waits for its GPU work: not idle, only expiry ends it (a is "killed" here)
  const std::uint32_t deadline = gpufrac_lease_deadline(a.word);
  ASSERT_EQ(gf_lease_acquire(&b), 0);
  const auto taken_ms = static_cast<std::uint32_t>(gf_now_ns() / 1000000);
  EXPECT_GT(static_cast<std::int32_t>(taken_ms - deadline), 20) << "not before deadline + grace";
  EXPECT_EQ(gpufrac_lease_holder(b.word), 2u);
  EXPECT_EQ(lane(0).leases, 0u) << "the taker cannot write a's lane";
  EXPECT_EQ(gf_lease_state(&a, gf_now_ns()), GF_LEASE_LOST);
  EXPECT_EQ(lane(0).leases, 1u) << "a charged its own lease on finding its word gone";
  EXPECT_LE(lane(0).charged_ns, 2'000'000'000u);
}

// A holder waiting for its own work announces when it expects it done: it is not taken over before
// that (plus grace), and what its work took past a takeover it charges itself (debt).
TEST_F(LeaseTest, ABusyHolderKeepsItsLeaseUntilTheEndItAnnouncedThenPaysTheRest) {
  gf_lease a = client("a", 500000), b = client("b", 500000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  const std::uint64_t from = gf_now_ns();
  const std::uint64_t word = gf_lease_busy(&a, 1, 100'000'000);  // 100 ms of work in flight
  ASSERT_EQ(word, a.word);
  ASSERT_EQ(gf_lease_acquire(&b), 0);
  const std::uint64_t taken = gf_now_ns();
  EXPECT_GE(taken - from, 100'000'000ull + 20'000'000ull) << "not before the announced end + grace";
  EXPECT_EQ(lane(0).leases, 0u) << "the taker cannot write a's lane";
  const std::uint64_t charged = lane(0).charged_ns;
  EXPECT_EQ(gf_lease_state(&a, gf_now_ns()), GF_LEASE_LOST);
  EXPECT_EQ(lane(0).leases, 1u) << "a charged its lease on finding its word gone";
  gf_lease_busy(&a, 0, 0);
  gf_lease_debt(&a, from);
  EXPECT_EQ(lane(0).leases, 2u) << "a pays for its work past the takeover";
  EXPECT_GE(lane(0).charged_ns - charged, taken - from);
  gf_lease_debt(&b, from);
  EXPECT_EQ(lane(1).leases, 0u) << "no debt while the lease is still held";
  gf_lease_extend(&b, gf_now_ns() + 20'000'000);  // its own new word
  gf_lease_debt(&b, from);
  EXPECT_EQ(lane(1).leases, 0u) << "nor after a change of its own";
  EXPECT_EQ(gf_lease_end(&b, no_drain, nullptr), 1);
  gf_lease_debt(&b, from);
  EXPECT_EQ(lane(1).leases, 1u) << "a renewal charges the lease, and is no debt";
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
  EXPECT_EQ(s.solo, 0) << "strict is never solo";
  std::this_thread::sleep_for(std::chrono::milliseconds(4));
  EXPECT_EQ(gf_lease_end(&s, no_drain, nullptr), 0) << "strict never renews";
  const std::uint64_t charged = lane(0).charged_ns, nb = lane(0).not_before_ns;
  // From its start, the charge over the weight, less one lease it may make good (the first).
  EXPECT_EQ(nb, s.start_ns - charged + charged * 4);
  EXPECT_EQ(s.local_nb, nb) << "kept by the process too (a lane can be forged)";
  EXPECT_EQ(gpufrac_lease_holder(__atomic_load_n(&m_.lease->lease, __ATOMIC_SEQ_CST)), 0u) << "free";
  ASSERT_EQ(gf_lease_acquire(&s), 0);
  EXPECT_GE(s.start_ns, nb) << "not before its pacing";
}

TEST_F(LeaseTest, HighPriorityPreemptsWithinItsCredit) {
  gf_lease batch = client("batch", 900000), probe = client("probe", 100000, GPUFRAC_ARBITER_HIGH);
  ASSERT_EQ(gf_lease_acquire(&batch), 0);
  gf_lease_busy(&batch, 1, 0);
  std::thread t([&] { EXPECT_EQ(gf_lease_acquire(&probe), 0); });
  while (__atomic_load_n(&m_.lease->preempt, __ATOMIC_SEQ_CST) == 0) std::this_thread::yield();
  EXPECT_EQ(m_.lease->preempt, 2u);
  EXPECT_FALSE(gf_lease_admits(&batch, gf_now_ns()));
  EXPECT_EQ(gf_lease_state(&batch, gf_now_ns()), GF_LEASE_END) << "at its next kernel boundary";
  gf_lease_busy(&batch, 0, 0);
  EXPECT_EQ(gf_lease_end(&batch, no_drain, nullptr), 0);
  t.join();
  EXPECT_EQ(gpufrac_lease_holder(probe.word), 2u);
  EXPECT_EQ(m_.lease->preempt, 0u) << "cleared by the claimant";
  // Past its credit (100 ms of its own time ahead of vclock) it waits its turn like anyone.
  lane(1).vtime = m_.lease->vclock + 100'000'000'000ull / 100000 + 1;
  EXPECT_EQ(gf_lease_high_eligible(&batch, 1), 0);
}

TEST_F(LeaseTest, PickIsStartTimeFairQueuing) {
  gf_lease a = client("a", 100000);
  client("b", 100000);
  client("c", 100000, GPUFRAC_ARBITER_HIGH);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  const std::uint64_t now = gf_now_ns();
  lane(1).seen_ns = now;
  lane(1).vtime = m_.lease->vclock + 50;
  EXPECT_EQ(gf_lease_pick(&a, now), 1) << "b waits";
  EXPECT_EQ(gf_lease_pick(&a, now + 20'000'000), -1) << "b's heartbeat is stale: not runnable";
  lane(2).seen_ns = now;
  lane(2).vtime = m_.lease->vclock + 500;
  EXPECT_EQ(gf_lease_pick(&a, now), 2) << "high priority within its credit first";
  m_.slots->slots[2].flags = 0;
  EXPECT_EQ(gf_lease_pick(&a, now), 1) << "then the least virtual time";
  lane(0).seen_ns = now;  // another process of a waits (seen after a's start)
  lane(0).vtime = m_.lease->vclock;
  EXPECT_EQ(gf_lease_pick(&a, now), 0);
}

TEST_F(LeaseTest, ChargesShowInTheWindowOfWholeSeconds) {
  client("a", 500000);
  const std::uint64_t t = 1000ull * 1000000000ull + 500000000ull;  // second 1000
  gf_arbiter_charge(&lane(0), 20000000, t, 500000, 0);
  gf_arbiter_charge(&lane(0), 30000000, t + 100000000, 500000, 0);
  EXPECT_EQ(lane(0).vtime - m_.lease->vclock, 50000000ull * 1000 / 500000);
  EXPECT_EQ(gf_arbiter_window_ns(&lane(0), t), 0u) << "the current second is not whole yet";
  EXPECT_EQ(gf_arbiter_window_ns(&lane(0), t + 1000000000ull), 50000000u);
  EXPECT_EQ(gf_arbiter_window_ns(&lane(0), t + 10000000000ull), 50000000u);
  EXPECT_EQ(gf_arbiter_window_ns(&lane(0), t + 11000000000ull), 0u) << "older than 10 s";
}

// The waiting bound (arbiter_abi.h "Bound"): from the slots file's params and weight, and this
// process's own last charge; never from the lease file.
TEST_F(LeaseTest, TheBoundFollowsTheWeightAndItsOwnLastLease) {
  gf_lease a = client("a", 300000), tiny = client("tiny", 1);
  // 4 x (30 + 20) + busy 280 + credit 100 = 580 ms.
  EXPECT_EQ(gf_lease_bound_ns(&a), 580'000'000ull);
  a.last_ns = 30'000'000;
  EXPECT_EQ(gf_lease_bound_ns(&a), 580'000'000ull + 30'000'000ull * 700000 / 300000);
  tiny.last_ns = 30'000'000;
  EXPECT_EQ(gf_lease_bound_ns(&tiny), 580'000'000ull + 30'000'000ull * 990000 / 10000) << "weight taken as 1 %";
  m_.slots->slots[0].weight_ppm = 1000000;  // a tenant cannot: the slots file is read-only in containers
  EXPECT_EQ(gf_lease_bound_ns(&a), 580'000'000ull + 30'000'000ull * 700000 / 300000) << "the weight read at init";
}

// A tenant that keeps writing "held by me, deadline now + lease, busy": the victim stops waiting at
// its bound (gf_lease_acquire returns 1), and claims the lease again with gf_lease_try once the
// forger stops.
// A process that cannot open the lease file read-write (a tenant chmod-ed it; issue 42 item 7) does
// not run free: it waits its bound as for a lease that never comes, then runs ungated, and joins the
// arbiter (claims the lease) once it can open the file.
gpufrac_arbiter* g_join_to = nullptr;
int join_when_open(gf_lease* l) {
  if (g_join_to == nullptr) return -1;
  __atomic_store_n(&l->arb, g_join_to, __ATOMIC_RELEASE);
  return 0;
}

TEST_F(LeaseTest, KeptOutOfTheLeaseFileItWaitsItsBoundThenJoins) {
  gpufrac_arbiter_params* p = &m_.slots->params;
  p->lease_ms = 5, p->grace_ms = 5, p->busy_ms = 0, p->credit_ms = 0;
  client("out", 300000);
  const std::uint64_t token = 0x1000 + std::hash<std::string>{}("out") % 1000;
  gf_arb slots_only{};
  slots_only.slots = m_.slots;
  slots_only.table = m_.table;
  gf_lease l{};
  char err[256];
  ASSERT_EQ(gf_lease_init(&l, &slots_only, token, 7, err, sizeof err), 0) << err;
  l.join = join_when_open;
  g_join_to = nullptr;
  const std::uint64_t t0 = gf_now_ns();
  EXPECT_EQ(gf_lease_acquire(&l), 1) << "stops waiting at its bound";
  EXPECT_GE(gf_now_ns() - t0, gf_lease_bound_ns(&l));
  EXPECT_EQ(gf_lease_try(&l), 0) << "still kept out";
  g_join_to = m_.lease;  // the host put the mode back
  std::this_thread::sleep_for(std::chrono::milliseconds(p->lease_ms + 1));
  EXPECT_EQ(gf_lease_try(&l), 1) << "joined and claimed";
  EXPECT_EQ(l.arb, m_.lease);
  EXPECT_EQ(gpufrac_lease_holder(m_.lease->lease), 1u);
}

TEST_F(LeaseTest, AForgedLeaseHoldsAWaiterNoLongerThanItsBound) {
  gpufrac_arbiter_params* p = &m_.slots->params;
  p->lease_ms = 5, p->grace_ms = 5, p->busy_ms = 0, p->credit_ms = 0;
  gf_lease victim = client("victim", 700000);
  client("forger", 300000);
  std::atomic<bool> stop{false};
  std::thread forger([&] {
    for (std::uint32_t e = 1; !stop; e++) {
      const std::uint64_t now = gf_now_ns();
      __atomic_store_n(&m_.lease->lease, gpufrac_lease_word(2, 1, e, static_cast<std::uint32_t>(now / 1000000) + 5),
                       __ATOMIC_SEQ_CST);
      __atomic_store_n(&m_.lease->info_epoch, e + 1, __ATOMIC_SEQ_CST);
      __atomic_store_n(&m_.lease->busy, e + 1, __ATOMIC_SEQ_CST);
      __atomic_store_n(&m_.lease->active_ns, now, __ATOMIC_SEQ_CST);
      __atomic_store_n(&m_.lease->busy_until_ns, now + 1'000'000'000, __ATOMIC_SEQ_CST);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  while (gpufrac_lease_holder(__atomic_load_n(&m_.lease->lease, __ATOMIC_SEQ_CST)) != 2) std::this_thread::yield();
  const std::uint64_t t0 = gf_now_ns();
  EXPECT_EQ(gf_lease_acquire(&victim), 1) << "stops waiting";
  const std::uint64_t waited = gf_now_ns() - t0;
  EXPECT_GE(waited, gf_lease_bound_ns(&victim));
  EXPECT_EQ(gf_lease_try(&victim), 0) << "the forger still holds it";
  stop = true;
  forger.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(12));  // past the forged deadline + grace
  EXPECT_EQ(gf_lease_try(&victim), 1) << "sane again: the lease is claimed";
  EXPECT_EQ(gpufrac_lease_holder(victim.word), 1u);
}

TEST_F(LeaseTest, GarbageInTheLeaseFileUpsetsNothing) {
  gf_lease a = client("a", 500000);
  m_.lease->lease = gpufrac_lease_word(1023, 1, 5, static_cast<std::uint32_t>(gf_now_ns() / 1000000) + 100000);
  m_.lease->preempt = 0xffffffffu;
  EXPECT_EQ(gf_lease_acquire(&a), 0) << "a holder index past the slots is nobody";
  EXPECT_EQ(gf_lease_state(&a, gf_now_ns()), GF_LEASE_HOLD) << "an impossible preemption request is cleared";
  EXPECT_EQ(m_.lease->preempt, 0u);
  m_.lease->lease = gpufrac_lease_word(2, 1, 9, static_cast<std::uint32_t>(gf_now_ns() / 1000000) + 100000);
  a.word = 0;
  EXPECT_EQ(gf_lease_acquire(&a), 0) << "a deadline no process could have written counts as expired";
  EXPECT_EQ(gf_lease_pick(&a, gf_now_ns()), -1);
}

TEST_F(LeaseTest, ParamsAreClamped) {
  m_.slots->params = {0, 0, 0, 0, 0, 0, 0, ~0u, ~0u, {0, 0, 0}};
  gpufrac_arbiter_params p;
  gf_arbiter_params(m_.slots, &p);
  EXPECT_EQ(p.lease_ms, 1u);
  EXPECT_EQ(p.credit_ms, 10000u);
  EXPECT_EQ(p.runnable_us, 2 * p.heartbeat_us);
  EXPECT_EQ(p.busy_ms, 2000u);
}

}  // namespace
