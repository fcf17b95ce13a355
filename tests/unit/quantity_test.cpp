#include <gtest/gtest.h>

#include "core/quantity.hpp"

namespace gpufrac {
namespace {

struct FractionCase {
  const char* text;
  Ppm expected;  // 0 = must be refused
};

void PrintTo(const FractionCase& c, std::ostream* os) {
  *os << '"' << c.text << '"';
}

class FractionTest : public ::testing::TestWithParam<FractionCase> {};

TEST_P(FractionTest, ParsesOrRefuses) {
  const auto& c = GetParam();
  auto r = parse_fraction(c.text);
  if (c.expected == 0) {
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_NE(r.error().message.find("e.g. 0.25"), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().kind, ErrorKind::user);
  } else {
    ASSERT_TRUE(r.has_value()) << c.text << ": " << r.error().message;
    EXPECT_EQ(*r, c.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, FractionTest,
                         ::testing::Values(FractionCase{"0.25", 250000}, FractionCase{"1", 1000000},
                                           FractionCase{"1.0", 1000000}, FractionCase{"0.125", 125000},
                                           FractionCase{"0.000001", 1}, FractionCase{"0.999999", 999999},
                                           FractionCase{"", 0}, FractionCase{"0", 0}, FractionCase{"0.0", 0},
                                           FractionCase{"-0.1", 0}, FractionCase{"1.0001", 0}, FractionCase{"NaN", 0},
                                           FractionCase{"inf", 0}, FractionCase{"1e-400", 0}, FractionCase{"0x1p-2", 0},
                                           FractionCase{" 0.5", 0}, FractionCase{"0.5 ", 0}, FractionCase{".5", 0},
                                           FractionCase{"0.5.", 0}, FractionCase{"0.0000001", 0}, FractionCase{"2", 0},
                                           FractionCase{"abc", 0}, FractionCase{"0,5", 0}, FractionCase{"+0.5", 0}));

TEST(Fraction, FormatsCanonically) {
  EXPECT_EQ(format_fraction(250000), "0.25");
  EXPECT_EQ(format_fraction(125000), "0.125");
  EXPECT_EQ(format_fraction(1000000), "1");
  EXPECT_EQ(format_fraction(1), "0.000001");
}

TEST(Fraction, BytesRoundDownToMiB) {
  EXPECT_EQ(fraction_bytes(40536ull << 20, 250000), 10134ull << 20);
  EXPECT_EQ(fraction_bytes(40536ull << 20, 125000), 5067ull << 20);
  EXPECT_EQ(fraction_bytes(81559ull << 20, 1000000), 81559ull << 20);
}

struct MemoryCase {
  const char* text;
  std::uint64_t expected;  // 0 = must be refused
};

void PrintTo(const MemoryCase& c, std::ostream* os) {
  *os << '"' << c.text << '"';
}

class MemoryTest : public ::testing::TestWithParam<MemoryCase> {};

TEST_P(MemoryTest, ParsesOrRefuses) {
  const auto& c = GetParam();
  auto r = parse_memory(c.text);
  if (c.expected == 0) {
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_NE(r.error().message.find("e.g. 4Gi"), std::string::npos) << r.error().message;
  } else {
    ASSERT_TRUE(r.has_value()) << c.text << ": " << r.error().message;
    EXPECT_EQ(*r, c.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, MemoryTest,
                         ::testing::Values(MemoryCase{"4096", 4096ull << 20}, MemoryCase{"4Gi", 4ull << 30},
                                           MemoryCase{"4096Mi", 4ull << 30}, MemoryCase{"4G", 4000000000ull},
                                           MemoryCase{"512M", 512000000ull}, MemoryCase{"1Ti", 1ull << 40},
                                           MemoryCase{"1T", 1000000000000ull}, MemoryCase{"64Ki", 65536},
                                           MemoryCase{"64k", 64000}, MemoryCase{"1.5Gi", 3ull << 29}, MemoryCase{"", 0},
                                           MemoryCase{"0", 0}, MemoryCase{"0Gi", 0}, MemoryCase{"-1Gi", 0},
                                           MemoryCase{"4GB", 0}, MemoryCase{"4gi", 0}, MemoryCase{"4 Gi", 0},
                                           MemoryCase{"1.5", 0}, MemoryCase{"04Gi", 0}, MemoryCase{"2Pi", 0},
                                           MemoryCase{"Gi", 0}, MemoryCase{"1e9", 0},
                                           MemoryCase{"99999999999999999999999Gi", 0}));

TEST(Memory, FormatsInTheLargestExactUnit) {
  EXPECT_EQ(format_memory(4ull << 30), "4Gi");
  EXPECT_EQ(format_memory(4000000000ull), "4G");
  EXPECT_EQ(format_memory(1536ull << 20), "1536Mi");
  EXPECT_EQ(format_memory(5000), "5k");
  EXPECT_EQ(format_memory(0), std::nullopt);
  EXPECT_EQ(format_memory(1001), std::nullopt);
  for (const char* t : {"4Gi", "3Ti", "1500M", "64Ki"}) EXPECT_EQ(format_memory(*parse_memory(t)), t);
}

}  // namespace
}  // namespace gpufrac
