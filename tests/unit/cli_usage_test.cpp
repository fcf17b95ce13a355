// Did-you-mean for command-line mistakes (cli/usage.hpp).
#include <gtest/gtest.h>

#include "cli/usage.hpp"

namespace gpufrac::cli {
namespace {

TEST(Usage, EditDistance) {
  EXPECT_EQ(edit_distance("status", "status"), 0u);
  EXPECT_EQ(edit_distance("stauts", "status"), 1u);  // an adjacent swap counts once
  EXPECT_EQ(edit_distance("lst", "list"), 1u);
  EXPECT_EQ(edit_distance("", "gc"), 2u);
  EXPECT_EQ(edit_distance("info", "mig"), 4u);
}

TEST(Usage, Closest) {
  const std::vector<std::string> commands{"info", "simulate", "status", "metrics", "gc", "cdi", "runtime", "mig"};
  EXPECT_EQ(closest("stauts", commands), "status");
  EXPECT_EQ(closest("stat", commands), "status");  // a prefix
  EXPECT_EQ(closest("metric", commands), "metrics");
  EXPECT_EQ(closest("cd", commands), "cdi");
  EXPECT_EQ(closest("xyz", commands), std::nullopt);
  EXPECT_EQ(closest("g", commands), std::nullopt);  // one letter is no typo of anything
  EXPECT_EQ(closest("--jsn", {"--help", "--json", "--config"}), "--json");
}

}  // namespace
}  // namespace gpufrac::cli
