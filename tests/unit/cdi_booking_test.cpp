// CDI devices book in the same ledger as every other front-end: a whole GPU is refused while a
// share of it is booked (and the other way round), a MIG device takes its own instance only, and
// the capacity refusal is the allocator's message; a share device books the compute of its size.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cdi/device_names.hpp"
#include "cdi_test_util.hpp"
#include "core/ledger/ledger.hpp"

namespace gpufrac::cdi {
namespace {

class CdiBooking : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/gpufrac-cdi-booking-XXXXXX";
    dir_ = ::mkdtemp(tmpl.data());
    inv_ = test::machine_inventory("dgx-8gpu-mixed.yaml");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Result<Booking> book(const std::string& container, const std::string& device) {
    auto request = request_for_cdi_device(device, inv_);
    if (!request) return std::unexpected(request.error());
    Ledger ledger(LedgerOptions{dir_ + "/ledger.json", dir_ + "/ledger.lock", "/proc", 120, {}});
    return ledger.reserve(ReserveArgs{container, device, *request, BookingSource::cdi, ::getpid(), std::nullopt}, inv_,
                          AllocationConfig{});
  }
  std::string refusal(const std::string& container, const std::string& device) {
    auto b = book(container, device);
    EXPECT_FALSE(b) << device << " was booked on " << b->grant.device_uuid;
    return b ? "" : b.error().message;
  }

  std::string dir_;
  Inventory inv_;
};

TEST_F(CdiBooking, WholeGpuAndSharesExcludeEachOther) {
  ASSERT_TRUE(book("a", "0-0.25"));
  EXPECT_EQ(refusal("b", "0"), "no GPU is free for a whole GPU: GPU 0 has 1 share (pinned by gpufrac.io/gpu)");
  EXPECT_EQ(refusal("b", "GPU-7c7581aa-b6e4-a6a5-e16e-ccdf0127e776"),
            "no GPU is free for a whole GPU: GPU 0 has 1 share (pinned by gpufrac.io/gpu)");
  auto whole = book("c", "1");
  ASSERT_TRUE(whole);
  EXPECT_TRUE(whole->grant.exclusive);
  EXPECT_EQ(whole->grant.bytes, 81920ull << 20);
  EXPECT_EQ(refusal("d", "1-0.125"),
            "no GPU can take fraction=0.125: GPU 1 is used whole by c (pinned by gpufrac.io/gpu)");
}

TEST_F(CdiBooking, FifthQuarterIsRefusedWithTheCapacityMessage) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(book("q" + std::to_string(i), "2-0.25")) << i;
  EXPECT_EQ(refusal("q4", "2-0.25"),
            "no GPU has 20.0 GiB free for fraction=0.25: GPU 2 0 B (pinned by gpufrac.io/gpu)");
  EXPECT_TRUE(book("q4", "3-0.25"));  // another GPU still has room
}

// A share device books the compute of its size (allocation.compute managed, the default): 0-0.25 a
// quarter of GPU 0's time, 0-4Gi 4 GiB of 80 GiB, a whole GPU all of it, a MIG instance none.
TEST_F(CdiBooking, SharesCarryTheComputeOfTheirSize) {
  auto quarter = book("a", "0-0.25");
  ASSERT_TRUE(quarter);
  EXPECT_EQ(quarter->grant.compute_ppm, 250'000u);
  auto memory = book("b", "0-4Gi");
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->grant.compute_ppm, 50'000u);
  auto whole = book("c", "1");
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->grant.compute_ppm, 1'000'000u);
  auto mig = book("m", "6:3");
  ASSERT_TRUE(mig);
  EXPECT_EQ(mig->grant.compute_ppm, 0u);
}

TEST_F(CdiBooking, MigDeviceTakesItsOwnInstance) {
  auto first = book("m1", "6:3");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->grant.device_uuid, inv_.gpus[6].mig_instances[3].uuid);
  auto other = book("m2", "6:4");  // same profile, another instance
  ASSERT_TRUE(other);
  EXPECT_EQ(other->grant.device_uuid, inv_.gpus[6].mig_instances[4].uuid);
  EXPECT_EQ(refusal("m3", "6:3"), "no idle MIG instance of profile 1g.10gb: GPU 6 gi 10 ci 0 in use by m1");
  EXPECT_EQ(refusal("m3", inv_.gpus[6].mig_instances[4].uuid),
            "no idle MIG instance of profile 1g.10gb: GPU 6 gi 11 ci 0 in use by m2");
  auto again = book("m1", "6:3");  // the hook retried: the same grant
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->existing);
}

}  // namespace
}  // namespace gpufrac::cdi
