// A claim's burst parameters (k8s/claim_params.hpp): the opaque configuration of driver gpufrac.io
// in status.allocation.devices.config gives its shares a memory limit above what they consume (and
// on-limit: wait); refusals name the claim and the field.
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
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memory-limit", "30Gi"}})}))),
            "memory=10Gi gpu=1 memory-limit=30Gi");
  EXPECT_EQ(
      booked(claim(json::array({result("gpu-1", "10Gi")}),
                   json::array({config({{"memory-limit", "30Gi"}, {"on-limit", "wait"}, {"on-limit-timeout", "5"}})}))),
      "memory=10Gi gpu=1 memory-limit=30Gi on-limit=wait on-limit-timeout=5");
  // Only the requests the configuration names; another driver's configuration is not ours.
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi"), result("gpu-0", "4Gi", "small")}),
                         json::array({config({{"memory-limit", "30Gi"}}, json::array({"gpu"})),
                                      {{"opaque", {{"driver", "net.example.com"}, {"parameters", {{"x", 1}}}}}}}))),
            "memory=10Gi gpu=1 memory-limit=30Gi; memory=4Gi gpu=0");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memory-limit", "10Gi"}})}))),
            "memory=10Gi gpu=1")
      << "a limit equal to the request is none";
}

TEST(DraClaimParams, RefusalsNameTheClaimAndTheField) {
  const std::string at = std::string("error: claim team-a/notebook (uid ") + kUid +
                         "): status.allocation.devices.config[0].opaque.parameters.";
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memory-limit", "8Gi"}})}))),
            at + "memory-limit: 8Gi is below the 10Gi the claim consumes on gpu-1; use at least that");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memory-limit", "lots"}})}))),
            at + "memory-limit: \"lots\" is not a memory quantity; use e.g. 30Gi");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memory-limt", "30Gi"}})}))),
            at + "memory-limt: unknown parameter; use memory-limit, on-limit or on-limit-timeout");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"on-limit", "block"}})}))),
            at + "on-limit: \"block\" is not fail or wait");
  EXPECT_EQ(booked(claim(json::array({result("gpu-1", "10Gi")}), json::array({config({{"memory-limit", 30}})}))),
            at + "memory-limit: not a string");
}

}  // namespace
}  // namespace gpufrac::dra
