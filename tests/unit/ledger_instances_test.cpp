// One container id, several containers: bookings belong to a container instance (docs/architecture.md
// "The ledger and a booking's life"). Two runtime roots (or containerd namespaces) may run containers
// with the same id at once; neither may ride on the other's booking or release it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "core/ledger/ledger.hpp"
#include "core/process.hpp"
#include "fake_proc.hpp"
#include "ledger_fixture.hpp"

namespace gpufrac {
namespace {

using testing::LedgerTest;
using testing::write_stat;

ReserveArgs of_process(ReserveArgs a, std::uint64_t start) {
  a.pid_start = start;
  a.instance = process_instance(a.pid, start);
  return a;
}

TEST_F(LedgerTest, TwoInstancesOfOneIdBookTwice) {
  auto first = ledger().reserve(of_process(args("c1", "0.25", 100), 5000), inv_, cfg_);
  auto second = ledger().reserve(of_process(args("c1", "0.25", 200), 6000), inv_, cfg_);
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(first->existing);
  EXPECT_FALSE(second->existing);  // before instances: admitted on the first one's booking
  ASSERT_EQ(entries().size(), 2u);
  EXPECT_EQ(entries()[0].instance, "p100-5000");
  EXPECT_EQ(entries()[1].instance, "p200-6000");
  auto retry = ledger().reserve(of_process(args("c1", "0.25", 200), 6000), inv_, cfg_);
  ASSERT_TRUE(retry);
  EXPECT_TRUE(retry->existing);  // the same instance again is a retry
  EXPECT_EQ(entries().size(), 2u);
  EXPECT_EQ(ledger().bookings_of("c1", "p200-6000")->size(), 1u);
  EXPECT_EQ(ledger().bookings_of("c1")->size(), 2u);
}

TEST_F(LedgerTest, PoststopReleasesOnlyTheStoppedInstance) {
  ASSERT_TRUE(ledger().reserve(of_process(args("c1", "0.25", 100), 5000), inv_, cfg_));
  ASSERT_TRUE(ledger().reserve(of_process(args("c1", "0.25", 200), 6000), inv_, cfg_));
  // runc's poststop state has no pid: the stopped one is the one whose process is gone.
  auto none = ledger().release_stopped("c1", "", 0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());  // both still run: nothing is released
  std::filesystem::remove_all(proc_ + "/100");
  auto released = ledger().release_stopped("c1", "", 0);
  ASSERT_TRUE(released);
  ASSERT_EQ(released->size(), 1u);
  EXPECT_EQ(released->at(0).pid, 100);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(entries()[0].pid, 200);
  // A state that names the pid releases that booking even while the process lingers.
  EXPECT_EQ(ledger().release_stopped("c1", "", 200)->size(), 1u);
  EXPECT_TRUE(entries().empty());
}

TEST_F(LedgerTest, WrapperInstancesAttachAndReleaseApart) {
  auto a = args("c1", "0.25", 0);
  a.instance = "w0000000000000001";
  auto b = a;
  b.instance = "w0000000000000002";
  ASSERT_TRUE(ledger().reserve(a, inv_, cfg_));
  ASSERT_TRUE(ledger().reserve(b, inv_, cfg_));
  ASSERT_EQ(entries().size(), 2u);
  auto attached = ledger().attach("c1", 100, std::nullopt, a.instance);
  ASSERT_TRUE(attached) << attached.error().message;
  ASSERT_EQ(attached->size(), 1u);
  EXPECT_EQ(entries()[0].pid, 100);
  EXPECT_TRUE(entries()[1].pending());  // the other instance's booking waits for its own process
  // The wrapper's poststop names its instance: its pending booking goes, the attached one stays.
  auto released = ledger().release_stopped("c1", b.instance, 0);
  ASSERT_EQ(released->size(), 1u);
  EXPECT_EQ(released->at(0).instance, b.instance);
  EXPECT_EQ(ledger().release("c1", a.instance)->size(), 1u);
  EXPECT_TRUE(entries().empty());
  EXPECT_EQ(ledger().release("c1", "W!").error().message,
            "instance \"W!\" is not valid; use 1-64 characters [a-z0-9-] starting with a letter");
}

// Random interleavings of create (the hook books with the container's process), retried hooks,
// and delete (the process exits, poststop without a pid) of containers whose ids collide across
// two runtime roots. After every step the ledger holds no more than each GPU has and every live
// container that was admitted still has exactly its own booking.
TEST_F(LedgerTest, CollidingIdsAcrossRuntimeRootsNeverOverbookOrLoseABooking) {
  std::mt19937 rng(20261125);
  const std::vector<std::string> ids = {"web", "db", "job"};
  struct Live {
    std::int64_t pid;
    std::uint64_t start;
    std::string fraction;
  };
  std::map<std::pair<int, std::string>, Live> live;  // (runtime root, id)
  std::int64_t next_pid = 1000;
  for (int step = 0; step < 3000; ++step) {
    const int root = static_cast<int>(rng() % 2);
    const std::string& id = ids[rng() % ids.size()];
    const std::string fraction = rng() % 2 ? "0.25" : "0.5";
    auto key = std::make_pair(root, id);
    auto it = live.find(key);
    if (it == live.end()) {  // create: a new process, then its createRuntime hook books
      const std::int64_t pid = next_pid++;
      const std::uint64_t start = 100000 + static_cast<std::uint64_t>(step);
      write_stat(proc_, pid, 'S', start);
      auto b = ledger().reserve(of_process(args(id, fraction, pid), start), inv_, cfg_);
      ASSERT_TRUE(b || b.error().kind == ErrorKind::user) << b.error().message;
      if (!b) {
        std::filesystem::remove_all(text::cat(proc_, "/", pid));  // the runtime kills it
      } else {
        EXPECT_FALSE(b->existing) << "step " << step << ": admitted on another container's booking";
        live[key] = Live{pid, start, fraction};
      }
    } else if (rng() % 4 == 0) {  // a retried hook of the same container: the same booking
      const Live& l = it->second;
      auto b = ledger().reserve(of_process(args(id, l.fraction, l.pid), l.start), inv_, cfg_);
      ASSERT_TRUE(b) << "step " << step << ": " << b.error().message;
      EXPECT_TRUE(b->existing) << "step " << step;
    } else {  // delete: the process is gone, then runc's poststop (no pid in the state)
      std::filesystem::remove_all(text::cat(proc_, "/", it->second.pid));
      ASSERT_TRUE(ledger().release_stopped(id, "", 0));
      live.erase(it);
    }
    std::map<std::string, std::uint64_t> booked;
    for (const auto& e : entries()) booked[e.gpu_uuid] += e.bytes;
    for (const auto& gpu : inv_.gpus) ASSERT_LE(booked[gpu.uuid], gpu.memory_bytes) << "step " << step;
    for (const auto& [k, l] : live) {
      auto mine = ledger().bookings_of(k.second, process_instance(l.pid, l.start));
      ASSERT_TRUE(mine);
      ASSERT_EQ(mine->size(), 1u) << "step " << step << ": " << k.second << " in root " << k.first;
      EXPECT_EQ(mine->at(0).pid, l.pid);
    }
  }
}

}  // namespace
}  // namespace gpufrac
