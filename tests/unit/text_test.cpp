#include <gtest/gtest.h>

#include "core/text.hpp"

namespace gpufrac::text {
namespace {

TEST(Text, CatMixesTypes) {
  EXPECT_EQ(cat("GPU ", 3, " has ", std::uint64_t{40}, '/', true), "GPU 3 has 40/true");
}

TEST(Text, FormatBytes) {
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(10ull << 30), "10.0 GiB");
  EXPECT_EQ(format_bytes(512ull << 20), "512.0 MiB");
  EXPECT_EQ(format_bytes((4ull << 30) + (512ull << 20)), "4.5 GiB");
}

TEST(Text, QuoteEscapesAndBounds) {
  EXPECT_EQ(quote("0.5"), "\"0.5\"");
  EXPECT_EQ(quote("a\nb"), "\"a\\x0ab\"");
  EXPECT_EQ(quote("\xc3\xa9"), "\"\\xc3\\xa9\"");
  std::string big(10000, 'x');
  auto q = quote(big, 8);
  EXPECT_EQ(q, "\"xxxxxxxx...\" (10000 bytes)");
}

TEST(Text, StrictIntegers) {
  EXPECT_EQ(parse_u64("42"), 42u);
  EXPECT_FALSE(parse_u64("-1"));
  EXPECT_FALSE(parse_u64(" 1"));
  EXPECT_FALSE(parse_u64("99999999999999999999"));
  EXPECT_EQ(parse_i64("-7"), -7);
  EXPECT_FALSE(parse_i64("+7"));
}

TEST(Text, SplitAndJoin) {
  auto parts = split("a,b,,c", ',');
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(join(parts, "|"), "a|b||c");
}

}  // namespace
}  // namespace gpufrac::text
