#include <gtest/gtest.h>

#include "cli/table.hpp"

namespace gpufrac::cli {
namespace {

TEST(Table, AlignsColumnsAndTrimsTrailingSpace) {
  Table t({"GPU", "NAME"});
  t.add({"0", "NVIDIA A100"});
  t.add({"10", "X"});
  EXPECT_EQ(t.render(), "GPU  NAME\n0    NVIDIA A100\n10   X\n");
}

TEST(Table, EmptyMeansNoRowsBesidesTheHeader) {
  Table t({"A"});
  EXPECT_TRUE(t.empty());
  t.add({"x"});
  EXPECT_FALSE(t.empty());
}

TEST(Table, PadsShortRows) {
  Table t({"A", "B", "C"}, "  ");
  t.add({"x"});
  EXPECT_EQ(t.render(), "  A  B  C\n  x\n");
}

}  // namespace
}  // namespace gpufrac::cli
