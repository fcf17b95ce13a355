// SM shares through DRA (k8s/claim_config.hpp): a claim's opaque configuration for gpufrac.io makes
// its share an SM share (computeMode sm, with a compute request), or sets a time share's mode; what
// it refuses, in one line naming the claim and the field.
#include <gtest/gtest.h>

#include "k8s/claim.hpp"
#include "shipped_machines.hpp"

namespace gpufrac::dra {
namespace {

using json = nlohmann::json;

constexpr const char* kUid = "2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41";
const ClaimRef kRef{"team-a", "decode", kUid};

json result(const json& consumed, const std::string& request = "gpu") {
  return {{"request", request},
          {"driver", "gpufrac.io"},
          {"pool", "node-1"},
          {"device", "gpu-0"},
          {"shareID", "0e4f6a1c-3b2d-4c5e-8f70-9a1b2c3d4e5f"},
          {"consumedCapacity", consumed}};
}

json claim(const json& results, const json& parameters, const json& requests = nullptr) {
  json entry = {{"source", "FromClaim"}, {"opaque", {{"driver", "gpufrac.io"}, {"parameters", parameters}}}};
  if (!requests.is_null()) entry["requests"] = requests;
  return {{"metadata", {{"name", "decode"}, {"namespace", "team-a"}, {"uid", kUid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}, {"config", json::array({entry})}}}}}}}};
}

Result<std::vector<ClaimShare>> shares(const json& c) {
  return claim_shares(c, kRef, "node-1", test::shipped_machine("a100-40gb-x2.yaml"));
}

const json kSm = {{"apiVersion", "gpufrac.io/v1"}, {"kind", "ShareConfig"}, {"computeMode", "sm"}};

TEST(DraSm, ComputeModeSmMakesAnSmShare) {
  auto s = shares(claim(json::array({result({{"memory", "8Gi"}, {"compute", "30"}})}), kSm));
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ((*s)[0].booking.compute_mode, ComputeMode::sm);
  EXPECT_EQ((*s)[0].booking.describe(), "memory=8Gi compute=30 compute-mode=sm gpu=0");
  // For another request only: this one stays a time share; strict sets the time share's mode.
  s = shares(claim(json::array({result({{"memory", "8Gi"}, {"compute", "30"}})}), kSm, json::array({"other"})));
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)[0].booking.compute_mode, std::nullopt);
  s = shares(claim(json::array({result({{"memory", "8Gi"}, {"compute", "30"}})}), {{"computeMode", "strict"}}));
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)[0].booking.describe(), "memory=8Gi compute=30 compute-mode=strict gpu=0");
  // Another driver's configuration is not ours.
  json other = claim(json::array({result({{"memory", "8Gi"}})}), {{"anything", 1}});
  other["status"]["allocation"]["devices"]["config"][0]["opaque"]["driver"] = "gpu.nvidia.com";
  EXPECT_TRUE(shares(other));
}

TEST(DraSm, RefusalsNameTheField) {
  const std::string where = std::string("claim team-a/decode (uid ") + kUid + "): status.allocation.devices.config[0]";
  auto s = shares(claim(json::array({result({{"memory", "8Gi"}})}), kSm));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, where +
                                   ".opaque.parameters.computeMode: sm on gpu-0 needs a compute request, the "
                                   "percent of the GPU's SMs (capacity requests compute: \"30\")");
  s = shares(claim(json::array({result({{"memory", "8Gi"}, {"compute", "30"}})}), {{"computeMode", "spatial"}}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            where + ".opaque.parameters.computeMode: \"spatial\" is not a compute mode; use fair, strict or sm");
  s = shares(claim(json::array({result({{"memory", "8Gi"}, {"compute", "30"}})}),
                   {{"computeMode", "sm"}, {"apiVersion", "gpufrac.io/v2"}}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            where +
                ".opaque.parameters.\"apiVersion\": \"gpufrac.io/v2\" is not accepted; use {\"apiVersion\": "
                "\"gpufrac.io/v1\", \"kind\": \"ShareConfig\", \"computeMode\": \"sm\", \"memoryLimit\": \"30Gi\", "
                "\"onLimit\": \"wait\", \"onLimitTimeout\": 5} (each optional; computeMode fair, strict or sm)");
}

}  // namespace
}  // namespace gpufrac::dra
