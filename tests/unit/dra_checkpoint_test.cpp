#include <gtest/gtest.h>

#include <filesystem>

#include "core/fs.hpp"
#include "k8s/checkpoint.hpp"

namespace gpufrac::dra {
namespace {

Checkpoint sample() {
  Checkpoint cp;
  cp.claims["2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41"] = PreparedClaim{
      "team-a",
      "trainer-gpu",
      PrepareState::completed,
      {{"gpu", "node-1", "gpu-0", "0e4f6a1c", {"k8s.gpufrac.io/gpu=2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41"}}}};
  cp.claims["3a0c0000-0000-4000-8000-000000000000"] = PreparedClaim{"team-b", "half", PrepareState::started, {}};
  return cp;
}

TEST(DraCheckpoint, RoundTrip) {
  const Checkpoint cp = sample();
  auto back = parse_checkpoint(checkpoint_text(cp), "checkpoint.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, cp);
}

TEST(DraCheckpoint, DamageIsRefusedWithThePath) {
  const std::string text = checkpoint_text(sample());
  const std::string tail = "; gpufrac-dra does not start on it: move it away only after unpreparing its claims";
  EXPECT_EQ(parse_checkpoint(text.substr(0, text.size() / 2), "/k/checkpoint.json").error().message,
            "/k/checkpoint.json: damaged checkpoint (not JSON)" + tail);
  std::string edited = text;
  edited.replace(edited.find("team-a"), 6, "team-z");  // valid JSON, content changed by hand
  EXPECT_EQ(parse_checkpoint(edited, "/k/checkpoint.json").error().message,
            "/k/checkpoint.json: damaged checkpoint (checksum mismatch)" + tail);
  EXPECT_EQ(parse_checkpoint(R"({"version":2,"checksum":"x","claims":{}})", "c").error().message,
            "c: damaged checkpoint (version is not 1)" + tail);
  EXPECT_FALSE(parse_checkpoint(R"({"version":1,"claims":{}})", "c"));
}

TEST(DraCheckpoint, MissingFileIsEmptyAndSavesAtomically) {
  const std::string dir = ::testing::TempDir() + "gpufrac-cp-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto empty = load_checkpoint(dir + "/checkpoint.json");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->claims.empty());
  ASSERT_TRUE(save_checkpoint(dir + "/checkpoint.json", sample()));
  EXPECT_EQ(*load_checkpoint(dir + "/checkpoint.json"), sample());
  EXPECT_EQ(std::filesystem::status(dir + "/checkpoint.json").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpufrac::dra
