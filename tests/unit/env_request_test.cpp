#include <gtest/gtest.h>

#include "core/request/env_request.hpp"
#include "core/request/unknown_keys.hpp"

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

constexpr const char* kVariableList =
    "GPUFRAC_FRACTION, GPUFRAC_MEMORY, GPUFRAC_MIG_PROFILE, GPUFRAC_GPU, GPUFRAC_POLICY, GPUFRAC_COMPUTE, "
    "GPUFRAC_COMPUTE_MODE, GPUFRAC_PRIORITY or GPUFRAC_GPUS";
constexpr const char* kAnnotationList =
    "gpufrac.io/fraction, gpufrac.io/memory, gpufrac.io/mig-profile, gpufrac.io/gpu, gpufrac.io/policy, "
    "gpufrac.io/compute, gpufrac.io/compute-mode, gpufrac.io/priority or gpufrac.io/gpus";

std::vector<std::string> messages(const Annotations& a, const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const auto& u : unknown_request_names(a, env)) out.push_back(u.message);
  return out;
}

TEST(UnknownNames, NearMissesWithTheClosestKnownName) {
  auto w =
      messages({}, {"GPUFRAC_FRACTON=0.25", "gpufrac.io/mig-profile=1g.10gb", "GPUFRAC_DEVICES=x",
                    "GPUFRAC_MEMORY_LIMITS=1", "GPUFRAC_CONFIG=/x", "GPUFRAC_FRACTION=0.25", "GPUFRAC_LIMITS_FILE=/l",
                    "GPUFRAC_FAKE_CUDA_DEVICES=x", "GPUFRAC_SOMETHING_ELSE=1", "PATH=/bin"});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], std::string("\"GPUFRAC_FRACTON\" in the container's environment is not a gpufrac request (did you "
                              "mean GPUFRAC_FRACTION?); use ") +
                      kVariableList);
  EXPECT_EQ(w[1],
            "\"gpufrac.io/mig-profile\" in the container's environment is not a gpufrac request; use "
            "GPUFRAC_MIG_PROFILE (or the annotation where the engine can set one)");
  EXPECT_EQ(w[2], std::string("\"GPUFRAC_SOMETHING_ELSE\" in the container's environment is not a gpufrac request; "
                              "use ") +
                      kVariableList);
  EXPECT_EQ(env_name_for("gpufrac.io/mig-profile"), "GPUFRAC_MIG_PROFILE");
}

TEST(UnknownNames, AnnotationTyposGetDidYouMean) {
  auto w = messages({{"gpufrac.io/fracton", "0.25"},
                     {"gpufrac.io/injected", "true"},
                     {"gpufrac.io/memory", "4Gi"},
                     {"gpufrac.io/zzz", "1"},
                     {"other.io/fracton", "1"}},
                    {});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], std::string("\"gpufrac.io/fracton\": unknown gpufrac annotation (did you mean "
                              "gpufrac.io/fraction?); use ") +
                      kAnnotationList);
  EXPECT_EQ(w[1], std::string("\"gpufrac.io/zzz\": unknown gpufrac annotation; use ") + kAnnotationList);
  // The parser words an unknown key the same way.
  auto parsed = parse_request({{"gpufrac.io/prority", "high"}, {"gpufrac.io/fraction", "0.25"}}, true);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, std::string("\"gpufrac.io/prority\": unknown gpufrac annotation (did you mean "
                                                "gpufrac.io/priority?); use ") +
                                        kAnnotationList);
}

TEST(UnknownNames, RefusedByDefaultWarnedAndDroppedOnRequest) {
  Annotations a{{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/prioirty", "high"}};
  const std::vector<std::string> env{"GPUFRAC_COMPUTE_MOD=strict"};
  auto refused = check_request_names(a, env, UnknownNames::refuse);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::user);
  EXPECT_EQ(refused.error().message, std::string("\"gpufrac.io/prioirty\": unknown gpufrac annotation (did you mean "
                                                 "gpufrac.io/priority?); use ") +
                                         kAnnotationList);
  EXPECT_EQ(a.size(), 2u);  // a refusal changes nothing
  auto warned = check_request_names(a, env, UnknownNames::warn);
  ASSERT_TRUE(warned);
  ASSERT_EQ(warned->size(), 2u);
  EXPECT_NE((*warned)[1].find("(did you mean GPUFRAC_COMPUTE_MODE?)"), std::string::npos);
  EXPECT_EQ(a, (Annotations{{"gpufrac.io/fraction", "0.25"}}));  // read without the unknown key
  EXPECT_EQ(describe(a, env), "fraction=0.25");
  // A long untrusted name gets no suggestion and stays bounded in the message.
  const std::string long_name = "GPUFRAC_" + std::string(300, 'X');
  auto w = messages({}, {long_name + "=1"});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].find("did you mean"), std::string::npos);
  EXPECT_LT(w[0].size(), 400u);
}

}  // namespace
}  // namespace gpufrac
