#include "core/plan/grant.hpp"

namespace gpufrac {

const char* to_string(ComputeMode m) {
  return m == ComputeMode::strict ? "strict" : m == ComputeMode::sm ? "sm" : "fair";
}

const char* to_string(ComputePriority p) {
  return p == ComputePriority::high ? "high" : "normal";
}

}  // namespace gpufrac
