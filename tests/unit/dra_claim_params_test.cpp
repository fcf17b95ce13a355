// A claim's burst parameters (k8s/claim_config.hpp): the opaque configuration of driver gpufrac.io
// in status.allocation.devices.config gives its shares a memory limit above what they consume (and
// onLimit: wait); refusals name the claim and the field.
#include <gtest/gtest.h>

#include "k8s/claim.hpp"
#include "shipped_machines.hpp"

namespace gpufrac::dra {
namespace {

using json = nlohmann::json;

constexpr const char* kUid = "2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41";
const ClaimRef kRef{"team-a", "notebook", kUid};

json claim(const json& results, const json& config) {
  return {{"metadata", {{"name", "notebook"}, {"namespace", "team-a"}, {"uid", kUid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}, {"config", config}}}}}}}};
}

json result(const std::string& device, const std::string& memory, const std::string& request = "gpu") {
  return {{"request", request},
          {"driver", "gpufrac.io"},
          {"pool", "node-1"},
          {"device", device},
          {"shareID", "0e4f6a1c-3b2d-4c5e-8f70-9a1b2c3d4e5f"},
          {"consumedCapacity", {{"memory", memory}}}};
}

json config(const json& parameters, const json& requests = json()) {
  json c{{"source", "FromClaim"}, {"opaque", {{"driver", "gpufrac.io"}, {"parameters", parameters}}}};
  if (!requests.is_null()) c["requests"] = requests;
  return c;
}

std::string booked(const json& c) {
  const Inventory inv = test::shipped_machine("a100-40gb-x2.yaml");
  auto shares = claim_shares(c, kRef, "node-1", inv);
  if (!shares) return "error: " + shares.error().message;
  std::string out;
  for (const auto& s : *shares) out += (out.empty() ? "" : "; ") + s.booking.describe();
  return out;
}

TEST(DraClaimParams, AMemoryLimitAboveWhatTheClaimConsumes) {
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memoryLimit", "30Gi"}})}))),
            "memory=10Gi gpu=1 memory-limit=30Gi");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}),
                         json::array({config({{"memoryLimit", "30Gi"}, {"onLimit", "wait"}, {"onLimitTimeout", 5}})}))),
            "memory=10Gi gpu=1 memory-limit=30Gi on-limit=wait on-limit-timeout=5");
  // Only the requests the configuration names; another driver's configuration is not ours.
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi"), result("gpu-0", "4Gi", "small")}),
                         json::array({config({{"memoryLimit", "30Gi"}}, json::array({"gpu"})),
                                      {{"opaque", {{"driver", "net.example.com"}, {"parameters", {{"x", 1}}}}}}}))),
            "memory=10Gi gpu=1 memory-limit=30Gi; memory=4Gi gpu=0");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memoryLimit", "10Gi"}})}))),
            "memory=10Gi gpu=1")
      << "a limit equal to the request is none";
}

TEST(DraClaimParams, RefusalsNameTheClaimAndTheField) {
  const std::string at = std::string("error: claim team-a/notebook (uid ") + kUid +
                         "): status.allocation.devices.config[0].opaque.parameters.";
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memoryLimit", "8Gi"}})}))),
            at + "memoryLimit: 8Gi is below the 10Gi the claim consumes on gpu-1; use at least that");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memoryLimit", "lots"}})}))),
            at + "memoryLimit: \"lots\" is not a memory quantity; use a string, e.g. \"30Gi\"");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memoryLimt", "30Gi"}})}))),
            at + "\"memoryLimt\": \"30Gi\" is not accepted; use {\"apiVersion\": \"gpufrac.io/v1\", \"kind\": "
                 "\"ShareConfig\", "
                 "\"computeMode\": \"sm\", \"memoryLimit\": \"30Gi\", \"onLimit\": \"wait\", \"onLimitTimeout\": 5} "
                 "(each optional; "
                 "computeMode fair, strict or sm)");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"onLimit", "block"}})}))),
            at + "onLimit: \"block\" is not fail or wait");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memoryLimit", 30}})}))),
            at + "memoryLimit: \"30\" is not a memory quantity; use a string, e.g. \"30Gi\"");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"onLimitTimeout", 5}})}))),
            at + "onLimitTimeout: is set without onLimit: wait; add it, or leave the timeout out");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}),
                         json::array({config({{"onLimit", "wait"}, {"onLimitTimeout", "05"}})}))),
            at + "onLimitTimeout: \"05\" is not a timeout; use whole seconds from 1 to 3600, e.g. 5");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}),
                         json::array({config({{"onLimit", "wait"}, {"onLimitTimeout", 3601}})}))),
            at + "onLimitTimeout: \"3601\" is not a timeout; use whole seconds from 1 to 3600, e.g. 5");
}

// One entry may carry both features: an SM share's compute mode and a burst limit.
TEST(DraClaimParams, ComputeModeAndMemoryLimitTogether) {
  json r = result("gpu-1", "10Gi");
  r["consumedCapacity"]["compute"] = "30";
  EXPECT_EQ(
      booked(claim(json::array({r}),
                   json::array({config({{"computeMode", "strict"}, {"memoryLimit", "30Gi"}, {"onLimit", "wait"}})}))),
      "memory=10Gi compute=30 compute-mode=strict gpu=1 memory-limit=30Gi on-limit=wait on-limit-timeout=30");
}

}  // namespace
}  // namespace gpufrac::dra
