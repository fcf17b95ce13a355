// Bookings owned by a Kubernetes ResourceClaim (source dra, k8s/): held until the claim is
// unprepared, whatever processes run; never touched by the container operations, even for a
// container whose id equals the claim's uid; written as a version 3 ledger.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_json.hpp"
#include "ledger_fixture.hpp"

namespace gpufrac {
namespace {

using testing::LedgerTest;

constexpr const char* kUid = "2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41";

ReserveArgs claim_args(const std::string& uid, const std::string& share, const std::string& memory) {
  ReserveArgs a;
  a.container_id = uid;
  a.device_key = "gpu-0/" + share;
  a.request = **parse_request({{"gpufrac.io/memory", memory}, {"gpufrac.io/gpu", "0"}}, false);
  a.source = BookingSource::dra;
  a.claim = "team-a/trainer-gpu";
  a.instance = "dra";
  return a;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(LedgerTest, ClaimBookingsLiveUntilTheClaimIsReleased) {
  cfg_.compute = ComputeManagement::unmanaged;  // no compute share: the file needs version 3, not 4
  auto b = ledger().reserve(claim_args(kUid, "s1", "10Gi"), inv_, cfg_);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_FALSE(b->existing);
  auto again = ledger().reserve(claim_args(kUid, "s1", "10Gi"), inv_, cfg_);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->existing);  // the kubelet re-sends prepare after its restart
  ASSERT_TRUE(ledger().reserve(claim_args(kUid, "s2", "5Gi"), inv_, cfg_));
  ASSERT_EQ(entries().size(), 2u);
  EXPECT_EQ(entries()[0].claim, "team-a/trainer-gpu");
  EXPECT_EQ(entries()[0].pid, 0);
  EXPECT_NE(file_text(dir_ + "/state/ledger.json").find("\"version\":3"), std::string::npos);
  // Long past the pending timeout, with no process: gc keeps them.
  now_ += 100000;
  auto gc = ledger().gc();
  ASSERT_TRUE(gc);
  EXPECT_TRUE(gc->reclaimed.empty());
  EXPECT_EQ(gc->kept, 2u);
  // A container that happens to use the claim's uid as its id cannot attach or release them.
  EXPECT_FALSE(ledger().attach(kUid, 1234, 99));
  EXPECT_TRUE(ledger().release(kUid)->empty());
  EXPECT_TRUE(ledger().release_stopped(kUid, "", 0)->empty());
  EXPECT_TRUE(ledger().bookings_of(kUid)->empty());
  EXPECT_EQ(ledger().bookings_of_claim(kUid)->size(), 2u);
  // Only the claim's release does.
  EXPECT_EQ(ledger().release_claim(kUid)->size(), 2u);
  EXPECT_TRUE(entries().empty());
  EXPECT_TRUE(ledger().release_claim(kUid)->empty());  // unprepare of an unknown claim: nothing, no error
  EXPECT_NE(file_text(dir_ + "/state/ledger.json").find("\"version\":1"), std::string::npos);
}

TEST_F(LedgerTest, ClaimBookingsAreCheckedLikeTheOthers) {
  ReserveArgs no_claim = claim_args(kUid, "s1", "10Gi");
  no_claim.claim.clear();
  EXPECT_EQ(ledger().reserve(no_claim, inv_, cfg_).error().message,
            "a claim name goes with a dra booking, and only there");
  ReserveArgs bad = claim_args(kUid, "s1", "10Gi");
  bad.claim = "Team A/x";
  EXPECT_EQ(ledger().reserve(bad, inv_, cfg_).error().message, "claim \"Team A/x\" is not <namespace>/<name>");
  ReserveArgs with_pid = claim_args(kUid, "s1", "10Gi");
  with_pid.pid = 1;
  EXPECT_EQ(ledger().reserve(with_pid, inv_, cfg_).error().message, "a claim's booking has no pid");
  // Capacity counts claims and containers alike.
  ASSERT_TRUE(ledger().reserve(claim_args(kUid, "s1", "30Gi"), inv_, cfg_));
  EXPECT_FALSE(ledger().reserve(claim_args(kUid, "s2", "30Gi"), inv_, cfg_));
}

// One rule for claim names and Kubernetes uids, wherever they arrive (kubelet, hook, DaemonSet).
TEST(ClaimNames, NamespaceAndNameBoundsAndUids) {
  EXPECT_TRUE(validate_claim_name(std::string(63, 'a') + "/" + std::string(253, 'b')));
  EXPECT_FALSE(validate_claim_name(std::string(64, 'a') + "/b"));  // a namespace is a DNS label
  EXPECT_FALSE(validate_claim_name("a/" + std::string(254, 'b')));
  EXPECT_FALSE(validate_claim_name("a/b/c"));
  EXPECT_TRUE(validate_kube_uid("2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41", "uid"));
  EXPECT_EQ(validate_kube_uid("../x", "pod uid").error().message,
            "pod uid \"../x\" is not a uid; use the object's metadata.uid");
  EXPECT_FALSE(validate_kube_uid("", "uid"));
  EXPECT_FALSE(validate_kube_uid(std::string(65, 'a'), "uid"));
  EXPECT_FALSE(validate_kube_uid("2F9C", "uid"));
}

TEST(LedgerJsonV3, ClaimEntriesRoundTripAndAreChecked) {
  LedgerEntry e;
  e.container_id = kUid;
  e.device_key = "gpu-0/s1";
  e.device_uuid = e.gpu_uuid = "GPU-894e9a6d-f600-b098-3d59-138988473c2c";
  e.bytes = 10ull << 30;
  e.request = "memory=10Gi gpu=0";
  e.source = BookingSource::dra;
  e.instance = "dra";
  e.claim = "team-a/trainer-gpu";
  const LedgerState state{{e}, {}};
  const std::string text = ledger_to_json(state);
  EXPECT_EQ(text.substr(0, 13), "{\"version\":3,");
  auto back = parse_ledger(text, "ledger.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, state);
  std::string v2 = text;
  v2.replace(v2.find("\"version\":3"), 11, "\"version\":2");
  EXPECT_EQ(parse_ledger(v2, "ledger.json").error().message,
            "ledger.json: entries[0]: a dra booking in a version 2 ledger");
  std::string unnamed = text;
  const std::string claim_field = ",\"claim\":\"team-a/trainer-gpu\"";
  unnamed.erase(unnamed.find(claim_field), claim_field.size());
  EXPECT_EQ(parse_ledger(unnamed, "ledger.json").error().message,
            "ledger.json: entries[0].claim: is set exactly on dra bookings");
}

}  // namespace
}  // namespace gpufrac
