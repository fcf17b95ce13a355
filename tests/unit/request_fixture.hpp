// A request parsed from annotations, for tests that feed the allocator: a refusal or no request
// fails the calling test and gives an empty Request.
#pragma once

#include <gtest/gtest.h>

#include "core/request/request.hpp"

namespace gpufrac::testing {

inline Request parsed_request(const Annotations& annotations, bool aliases = true) {
  auto r = parse_request(annotations, aliases);
  EXPECT_TRUE(r && *r) << (r ? "no request" : r.error().message);
  return r && *r ? **r : Request{};
}

}  // namespace gpufrac::testing
