// GPU work inside a call (limits/shim/lease_call.c, gf_call.h): a launch that returns once its kernel
// ran (CUDA_LAUNCH_BLOCKING=1) or that blocked on a full queue. What the holder announces for such a
// call, that it keeps its turn and is charged the call, and that a call which hid its work past a
// takeover is its debt. Several gf_lease clients over one pair of shared mappings stand in for
// processes.
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gf_call.h"

namespace {

constexpr const char* kGpu = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";
constexpr std::uint64_t kMs = 1'000'000;

class CallTest : public ::testing::Test {
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
    // A waiter stays runnable for a second after its last heartbeat: on a loaded machine the test's
    // own steps between a heartbeat and the hand-over may take longer than the 10 ms default.
    p.runnable_us = 1000000;
    gf_arbiter_slots_format(m_.slots, kGpu, &p);
    gf_arbiter_format(m_.lease);
  }
  void TearDown() override {
    ::munmap(m_.table, sizeof(gpufrac_arbiter_lane) * GPUFRAC_ARBITER_SLOTS);
    gf_arbiter_unmap(&m_);
  }
  gf_lease client(const char* key, std::uint32_t weight) {
    const std::uint64_t token = 0x2000 + std::hash<std::string>{}(key) % 1000;
    EXPECT_GE(gf_arbiter_setup(&m_, key, token, weight, 0, 1), 0);
    gf_lease l{};
    char err[256];
    EXPECT_EQ(gf_lease_init(&l, &m_, token, 7, err, sizeof err), 0) << err;
    return l;
  }
  gpufrac_arbiter_lane& lane(unsigned i) { return m_.table[i]; }
  static void no_drain(void*) {}
  static void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
  gf_arb m_{};
};

TEST_F(CallTest, ABlockingCallAnnouncesItsMeasuredDurationAtMostBusyMs) {
  const gf_lease l = client("a", 300000);  // busy_ms 280 (the default)
  EXPECT_EQ(gf_call_expect_ns(&l, 0, GF_NO_CALL), 0u) << "no call, nothing in flight";
  EXPECT_EQ(gf_call_expect_ns(&l, 5 * kMs, GF_NO_CALL), 5 * kMs) << "no call: the work in flight";
  EXPECT_EQ(gf_call_expect_ns(&l, 0, 200 * kMs), 200 * kMs) << "the call's measured duration";
  EXPECT_EQ(gf_call_expect_ns(&l, 5 * kMs, 200 * kMs), 205 * kMs) << "behind the work in flight";
  EXPECT_EQ(gf_call_expect_ns(&l, 0, 0), 280 * kMs) << "a call not measured yet may be long: the most";
  EXPECT_EQ(gf_call_expect_ns(&l, 100 * kMs, 200 * kMs), 280 * kMs) << "at most busy_ms";
  EXPECT_EQ(gf_call_expect_ns(&l, 300 * kMs, GF_NO_CALL), 280 * kMs);
  EXPECT_EQ(gf_call_expect_ns(&l, UINT64_MAX - 1, 2), 280 * kMs) << "no overflow";
  EXPECT_EQ(gf_call_expect_ns(&l, 2, UINT64_MAX - 1), 280 * kMs) << "no overflow";
}

// The holder's kernel runs inside its launch call for 100 ms (more than lease + grace, 50 ms): busy
// with the call's duration announced, it is neither idle nor overdue to a waiter until that end
// (+ grace); when the call returns its lease is due, it hands over, and its charge holds the call.
TEST_F(CallTest, AHolderInsideABlockingCallKeepsItsTurnAndIsChargedTheCall) {
  gf_lease a = client("a", 300000), b = client("b", 700000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  const std::uint64_t from = gf_now_ns();
  ASSERT_EQ(gf_lease_busy(&a, 1, gf_call_expect_ns(&a, 0, 100 * kMs)), a.word);
  // b waits (heartbeats) through the call: past a's deadline + grace (50 ms), but before the end a
  // announced + grace (120 ms) it may not take the lease.
  while (gf_now_ns() - from < 95 * kMs) {
    EXPECT_EQ(gf_lease_try(&b), 0) << "b took the lease " << (gf_now_ns() - from) / kMs << " ms into a's call";
    sleep_ms(1);
  }
  while (gf_now_ns() - from < 100 * kMs) sleep_ms(1);
  gf_lease_busy(&a, 0, 0);  // the call returned
  gf_lease_debt(&a, from);
  EXPECT_EQ(lane(0).leases, 0u) << "no debt: the lease was held throughout";
  EXPECT_EQ(gf_lease_state(&a, gf_now_ns()), GF_LEASE_END) << "its turn is over";
  EXPECT_EQ(gf_lease_end(&a, no_drain, nullptr), 0) << "handed to b, which waits";
  EXPECT_EQ(lane(0).leases, 1u);
  EXPECT_GE(lane(0).charged_ns, 100 * kMs) << "the call's time is a's";
  EXPECT_EQ(gf_lease_try(&b), 1);
  EXPECT_EQ(gpufrac_lease_holder(b.word), 2u);
}

// A call that returned late without announcing anything (a full queue): a waiter took the holder for
// idle and took the lease over; the holder, finding its word gone, charges its lease and then owes
// the whole call. A short call, or a long one while the lease stayed held, owes nothing (the lease's charge
// holds it).
TEST_F(CallTest, ACallThatHidItsWorkIsDebtWhenTheLeaseWasTakenMeanwhile) {
  gf_lease a = client("a", 300000), b = client("b", 700000);
  ASSERT_EQ(gf_lease_acquire(&a), 0);
  std::uint64_t from = gf_now_ns();
  EXPECT_EQ(gf_call_returned(&a, from, from + kMs), 0) << "1 ms: not longer than idle_us (2 ms)";
  sleep_ms(5);
  EXPECT_EQ(gf_call_returned(&a, from, gf_now_ns()), 1);
  EXPECT_EQ(lane(0).leases, 0u) << "still held: no debt";
  from = gf_now_ns();
  gf_lease_touch(&a, from);  // admitted a launch that then blocks
  ASSERT_EQ(gf_lease_acquire(&b), 0) << "a looks idle after 2 ms";
  EXPECT_EQ(lane(0).leases, 0u) << "b cannot write a's lane: a charges its lease when it finds it gone";
  const std::uint64_t charged = lane(0).charged_ns;
  sleep_ms(5);
  const std::uint64_t now = gf_now_ns();
  EXPECT_EQ(gf_call_returned(&a, from, now), 1);
  EXPECT_EQ(lane(0).leases, 2u) << "a pays for its call";
  EXPECT_GE(lane(0).charged_ns - charged, now - from);
  EXPECT_EQ(lane(1).leases, 0u) << "b is charged only its own lease, later";
}

}  // namespace
