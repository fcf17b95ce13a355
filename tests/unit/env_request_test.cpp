#include <gtest/gtest.h>

#include "core/request/env_request.hpp"

namespace gpufrac {
namespace {

using Env = std::vector<std::string>;

std::string describe(const Annotations& a, const Env& env, bool aliases = true) {
  auto r = parse_container_request(a, env, aliases);
  if (!r) return "error: " + r.error().message;
  return *r ? (*r)->describe() : "-";
}

TEST(EnvRequest, VariablesStandForTheAnnotations) {
  EXPECT_EQ(describe({}, {"PATH=/bin", "GPUFRAC_FRACTION=0.25"}), "fraction=0.25");
  EXPECT_EQ(describe({}, {"GPUFRAC_MEMORY=4Gi", "GPUFRAC_GPU=1", "GPUFRAC_POLICY=spread"}),
            "memory=4Gi gpu=1 policy=spread");
  EXPECT_EQ(describe({}, {"GPUFRAC_MIG_PROFILE=1g.10gb"}), "mig-profile=1g.10gb");
  EXPECT_EQ(describe({}, {"PATH=/bin", "GPUFRAC_DEVICES=GPU-x", "GPUFRAC_CONFIG=/x"}), "-");
  EXPECT_EQ(describe({{"gpufrac.io/fraction", "0.5"}}, {"PATH=/bin"}), "fraction=0.5");
  // The same value twice is one setting (engines may repeat an entry).
  EXPECT_EQ(describe({}, {"GPUFRAC_FRACTION=0.25", "GPUFRAC_FRACTION=0.25"}), "fraction=0.25");
}

TEST(EnvRequest, ErrorsNameTheVariable) {
  EXPECT_EQ(describe({}, {"GPUFRAC_FRACTION=1.5"}),
            "error: GPUFRAC_FRACTION: \"1.5\" is out of range; use a decimal 0 < f <= 1 with at most 6 decimals, "
            "e.g. 0.25");
  EXPECT_EQ(describe({}, {"GPUFRAC_FRACTION=0.25", "GPUFRAC_MEMORY=4Gi"}),
            "error: GPUFRAC_FRACTION and GPUFRAC_MEMORY: both set; set only one of GPUFRAC_FRACTION, GPUFRAC_MEMORY "
            "or GPUFRAC_MIG_PROFILE");
  EXPECT_EQ(describe({}, {"GPUFRAC_GPU=0"}),
            "error: GPUFRAC_GPU: is set without a size; add GPUFRAC_FRACTION, GPUFRAC_MEMORY, GPUFRAC_MIG_PROFILE, "
            "GPUFRAC_COMPUTE or GPUFRAC_GPUS");
  EXPECT_EQ(describe({}, {"GPUFRAC_FRACTION=0.25", "GPUFRAC_POLICY=tight"}),
            "error: GPUFRAC_POLICY: \"tight\" is not a policy; use binpack or spread");
  EXPECT_EQ(describe({}, {"GPUFRAC_FRACTION=0.25", "GPUFRAC_FRACTION=0.5"}),
            "error: GPUFRAC_FRACTION: set twice in the container's environment (\"0.25\" and \"0.5\"); set it once");
  const std::string too_long = describe({}, {"GPUFRAC_FRACTION=" + std::string(300, '1')});
  EXPECT_EQ(too_long.substr(0, 29), "error: GPUFRAC_FRACTION: \"111");
  EXPECT_NE(too_long.find("is too long (at most 256 bytes)"), std::string::npos) << too_long;
}

TEST(EnvRequest, AnnotationAndVariableTogetherAreRefused) {
  EXPECT_EQ(describe({{"gpufrac.io/memory", "4Gi"}}, {"GPUFRAC_FRACTION=0.25"}),
            "error: gpufrac.io/memory and GPUFRAC_FRACTION: a request both by annotation and by environment; use one "
            "of them");
  EXPECT_EQ(describe({{"gpu-fraction", "0.5"}}, {"GPUFRAC_FRACTION=0.25"}, true).substr(0, 42),
            "error: gpu-fraction and GPUFRAC_FRACTION: ");
  // An alias that is off is not a request: the variable decides.
  EXPECT_EQ(describe({{"gpu-fraction", "0.5"}}, {"GPUFRAC_FRACTION=0.25"}, false), "fraction=0.25");
  // gpufrac-runtime's marker is not a request either.
  EXPECT_EQ(describe({{"gpufrac.io/injected", "true"}}, {"GPUFRAC_FRACTION=0.25"}), "fraction=0.25");
}

TEST(EnvRequest, RequestKeysCarryTheAnnotationNames) {
  auto keys = request_keys({{"other", "x"}}, {"GPUFRAC_MIG_PROFILE=1g.10gb"}, true);
  ASSERT_TRUE(keys);
  EXPECT_EQ(keys->keys, (Annotations{{"gpufrac.io/mig-profile", "1g.10gb"}, {"other", "x"}}));
  EXPECT_EQ(keys->names.at("gpufrac.io/mig-profile"), "GPUFRAC_MIG_PROFILE");
}

TEST(EnvRequest, FastCheck) {
  EXPECT_TRUE(has_container_request({}, {"GPUFRAC_FRACTION=0.25"}, true));
  EXPECT_TRUE(has_container_request({}, {"GPUFRAC_GPU=x"}, true));  // an error to report
  EXPECT_FALSE(has_container_request({}, {"GPUFRAC_FRACTON=0.25", "GPUFRAC_DEVICES=x", "PATH=/"}, true));
  EXPECT_TRUE(has_container_request({}, {"GPUFRAC_FRACTION"}, true));  // no "=": asked, and refused
  EXPECT_EQ(describe({}, {"GPUFRAC_FRACTION"}).substr(0, 30), "error: GPUFRAC_FRACTION: \"\" is");
}

TEST(EnvRequest, WarningsForNearMisses) {
  auto w = env_request_warnings({"GPUFRAC_FRACTON=0.25", "gpufrac.io/mig-profile=1g.10gb", "GPUFRAC_DEVICES=x",
                                 "GPUFRAC_MEMORY_LIMITS=1", "GPUFRAC_CONFIG=/x", "GPUFRAC_FRACTION=0.25",
                                 "GPUFRAC_SOMETHING_ELSE=1", "PATH=/bin"});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0],
            "\"GPUFRAC_FRACTON\" in the container's environment is not a gpufrac request (did you mean "
            "GPUFRAC_FRACTION?); use GPUFRAC_FRACTION, GPUFRAC_MEMORY, GPUFRAC_MIG_PROFILE, GPUFRAC_GPU, "
            "GPUFRAC_GPUS, GPUFRAC_POLICY, GPUFRAC_COMPUTE, GPUFRAC_COMPUTE_MODE, GPUFRAC_PRIORITY, "
            "GPUFRAC_MEMORY_LIMIT, GPUFRAC_FRACTION_LIMIT, GPUFRAC_ON_LIMIT or GPUFRAC_ON_LIMIT_TIMEOUT");
  EXPECT_EQ(w[1],
            "\"gpufrac.io/mig-profile\" in the container's environment is not a gpufrac request; use "
            "GPUFRAC_MIG_PROFILE (or the annotation where the engine can set one)");
  EXPECT_EQ(w[2].find("(did you mean"), std::string::npos);
  EXPECT_EQ(env_name_for("gpufrac.io/mig-profile"), "GPUFRAC_MIG_PROFILE");
}

}  // namespace
}  // namespace gpufrac
