// JSON read the same way by every runtime: duplicates, trailing data, bad UTF-8, lone surrogates,
// and the size, depth and value bounds, each a one-line error naming the place.
#include <gtest/gtest.h>

#include "core/spec/strict_json.hpp"

namespace gpufrac {
namespace {

std::string error_of(std::string_view text, const JsonLimits& limits = {}) {
  auto r = parse_strict_json(text, "config.json", limits);
  EXPECT_FALSE(r) << text;
  if (r) return "";
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  EXPECT_TRUE(r.error().message.starts_with("config.json: ")) << r.error().message;
  return r.error().message;
}

TEST(StrictJson, ReadsOrdinaryDocuments) {
  auto r = parse_strict_json(R"({"linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}]}, "a": [1, 2.5, null]})",
                             "config.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)["linux"]["namespaces"][1]["type"], "mount");
}

TEST(StrictJson, DuplicateKeysAtAnyLevelNameThePlace) {
  EXPECT_NE(error_of(R"({"linux": {}, "process": {}, "linux": {"namespaces": []}})")
                .find(R"(duplicate key "linux" in the object at /)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"linux": {"namespaces": [{"type": "pid", "type": "mount"}]}})")
                .find(R"(duplicate key "type" in the object at /linux/namespaces/0)"),
            std::string::npos);
  // Same key in sibling objects is fine.
  EXPECT_TRUE(parse_strict_json(R"([{"a": 1}, {"a": 2}])", "x"));
}

TEST(StrictJson, TrailingDataBadUtf8AndLoneSurrogates) {
  EXPECT_NE(error_of(R"({"a": 1} {"a": 2})").find("invalid JSON at byte"), std::string::npos);
  EXPECT_NE(error_of("{\"a\": \"\xff\"}").find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"a": "\ud800"})").find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"a": "\udc00x"})").find("invalid JSON"), std::string::npos);
  EXPECT_TRUE(parse_strict_json(R"({"a": "\ud83d\ude00"})", "x"));  // a pair is fine
  // nlohmann's lexer would stop at the NUL and never see the second document (found by fuzz_oci).
  using namespace std::string_view_literals;
  EXPECT_EQ(error_of("{\"a\": 1}\0{\"linux\": {}}"sv),
            "config.json: a NUL byte at byte 8; gpufrac reads only JSON that every runtime reads the same way");
}

TEST(StrictJson, BoundsComeBeforeAnyDom) {
  EXPECT_NE(error_of(std::string(100, '[') + std::string(100, ']')).find("nested deeper than 64 levels"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(50000, '[')).find("nested deeper than 64 levels"), std::string::npos);
  EXPECT_NE(error_of("[1,2,3,4,5]", {.max_values = 4}).find("more than 4 values"), std::string::npos);
  EXPECT_NE(
      error_of(std::string(2048, ' ') + "{}", {.max_bytes = 1024}).find("2050 bytes, more than the 1024 accepted"),
      std::string::npos);
  EXPECT_TRUE(parse_strict_json(std::string(64, '[') + std::string(64, ']'), "x"));
}

}  // namespace
}  // namespace gpufrac
