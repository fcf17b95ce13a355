// The fraction capacity (k8s/resource_slices.hpp, k8s/claim.hpp): a claim asks for an exact share
// of one GPU in parts per million, so four quarters or eight eighths fit every GPU whatever its
// memory, and prepare books that share as gpufrac.io/fraction does. The scheduler's
// consumable-capacity rule and the API server's request-policy checks are restated here.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>

#include "core/quantity.hpp"
#include "core/text.hpp"
#include "k8s/claim.hpp"
#include "k8s/dra_devices.hpp"
#include "k8s/resource_slices.hpp"
#include "nvml/simulated.hpp"
#include "shipped_machines.hpp"

namespace gpufrac::dra {
namespace {

using json = nlohmann::json;

constexpr const char* kUid = "2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41";
const ClaimRef kRef{"team-a", "trainer-gpu", kUid};

Inventory machine(const std::string& file) {
  return test::shipped_machine(file);
}

std::vector<std::string> machine_files() {
  return test::shipped_machine_files();
}

// One allocation result of a share, as the scheduler writes it, and a claim holding it.
json share(const std::string& device, const json& consumed) {
  return {{"request", "gpu"},
          {"driver", "gpufrac.io"},
          {"pool", "node-1"},
          {"device", device},
          {"shareID", "0e4f6a1c-3b2d-4c5e-8f70-9a1b2c3d4e5f"},
          {"consumedCapacity", consumed}};
}

json claim(const json& result) {
  return {{"metadata", {{"name", "trainer-gpu"}, {"namespace", "team-a"}, {"uid", kUid}}},
          {"status", {{"allocation", {{"devices", {{"results", json::array({result})}}}}}}}};
}

// What one share consumes of a capacity, as the 1.36 scheduler computes it (KEP-5075): the
// request, else the default; raised to min, rounded up to min + n * step; nothing above max (the
// device cannot take the request). A capacity whose default is 0 (compute) consumes 0 when not asked.
std::optional<std::uint64_t> consumed(const json& capacity, const std::string& requested) {
  const json& policy = capacity["requestPolicy"];
  const json& range = policy["validRange"];
  auto q = [](const json& v) { return *parse_k8s_quantity(v.get<std::string>()); };
  const std::uint64_t min = q(range["min"]), step = q(range["step"]);
  std::uint64_t amount = std::max(requested.empty() ? q(policy["default"]) : *parse_k8s_quantity(requested), min);
  amount = min + (amount - min + step - 1) / step * step;
  if (amount > q(range["max"])) return std::nullopt;
  return amount;
}

// How many shares asking `requests` the scheduler places on an empty shareable device.
std::size_t shares_that_fit(const json& device, const std::map<std::string, std::string>& requests) {
  for (const auto& [name, _] : requests)
    if (!device["capacity"].contains(name)) return 0;  // a request also filters: the device must have it
  std::map<std::string, std::uint64_t> used;
  for (std::size_t n = 0;; ++n)
    for (const auto& [name, cap] : device["capacity"].items()) {
      auto r = requests.find(name);
      const auto c = consumed(cap, r == requests.end() ? "" : r->second);
      if (!c || (used[name] += *c) > *parse_k8s_quantity(cap["value"].get<std::string>())) return n;
    }
}

// The API server's checks of a request policy (validation.go validateRequestPolicyRange).
std::string policy_problems(const json& capacity) {
  auto q = [](const json& v) { return *parse_k8s_quantity(v.get<std::string>()); };
  const json& policy = capacity["requestPolicy"];
  const json& range = policy["validRange"];
  const std::uint64_t value = q(capacity["value"]), min = q(range["min"]), max = q(range["max"]);
  const std::uint64_t def = q(policy["default"]), step = q(range["step"]);
  if (!(min <= def && def <= max && max <= value)) return "not min <= default <= max <= value";
  if (min + step > value) return "min + step is beyond the value";
  if ((def - min) % step != 0 || (max - min) % step != 0) return "default or max is not whole steps from min";
  return "";
}

// Every GPU of every shipped machine, MIG mode off: four quarters and eight eighths of it fit by the
// fraction capacity, whatever its memory, and each books its exact share.
TEST(DraSlices, QuartersAndEighthsFitEveryShippedGpu) {
  std::size_t gpus = 0;
  for (const auto& file : machine_files()) {
    Inventory inv = machine(file);
    for (auto& g : inv.gpus) g.mig_enabled = false, g.mig_instances.clear();
    for (const auto& s : render_resource_slices(inv, {"node-1", "", 1ull << 30, 1}))
      for (const auto& d : s["spec"].value("devices", json::array())) {
        ASSERT_EQ(d.value("allowMultipleAllocations", false), true);
        SCOPED_TRACE(file + " " + d["name"].get<std::string>());
        ++gpus;
        for (const auto& [name, cap] : d["capacity"].items()) EXPECT_EQ(policy_problems(cap), "") << name;
        EXPECT_EQ(shares_that_fit(d, {{"fraction", "250k"}}), 4u);
        EXPECT_EQ(shares_that_fit(d, {{"fraction", "125k"}}), 8u);
        const std::uint64_t memory = *parse_k8s_quantity(d["capacity"]["memory"]["value"].get<std::string>());
        EXPECT_LE(4 * fraction_bytes(memory, 250000), memory);
        json share = {{"request", "gpu"},
                      {"driver", "gpufrac.io"},
                      {"pool", "node-1"},
                      {"device", d["name"]},
                      {"shareID", "0e4f6a1c-3b2d-4c5e-8f70-9a1b2c3d4e5f"},
                      {"consumedCapacity", {{"memory", "1Gi"}, {"fraction", "125k"}}}};
        auto shares = claim_shares({{"metadata", {{"uid", "u"}}},
                                    {"status", {{"allocation", {{"devices", {{"results", json::array({share})}}}}}}}},
                                   {"ns", "c", "u"}, "node-1", inv);
        ASSERT_TRUE(shares) << shares.error().message;
        EXPECT_EQ((*shares)[0].booking.fraction, 125000u);
        EXPECT_EQ((*shares)[0].bytes, fraction_bytes(memory, 125000));
      }
  }
  EXPECT_EQ(gpus, 19u);  // 15, the r615 machine's three and a100-40gb-mig-ci's one
  // By memory a quarter of the A100-40GB (10134Mi) rounds up to the 1Gi step: only three fit.
  auto a100 = render_resource_slices(machine("a100-40gb-x1.yaml"), {"node-1", "", 1ull << 30, 1});
  EXPECT_EQ(shares_that_fit(a100[1]["spec"]["devices"][0], {{"memory", "10134Mi"}}), 3u);
}

// A share of consumedCapacity fraction books that fraction of the GPU's memory (the scheduler
// also lists the memory default); a share by memory lists the fraction default and books its memory.
TEST(DraClaim, AFractionOfTheGpuIsBookedAsGpufracIoFractionBooksIt) {
  const Inventory inv = machine("a100-40gb-x1.yaml");
  auto booked = [&](const json& consumed) -> std::string {
    auto shares = claim_shares(claim(share("gpu-0", consumed)), kRef, "node-1", inv);
    if (!shares) return shares.error().message;
    return text::cat((*shares)[0].booking.describe(), " ", (*shares)[0].bytes >> 20, "Mi");
  };
  EXPECT_EQ(booked({{"memory", "1Gi"}, {"fraction", "250k"}}), "fraction=0.25 gpu=0 10134Mi");
  EXPECT_EQ(booked({{"memory", "1Gi"}, {"fraction", "125k"}}), "fraction=0.125 gpu=0 5067Mi");
  EXPECT_EQ(booked({{"memory", "10Gi"}, {"fraction", "1"}}), "memory=10Gi gpu=0 10240Mi");
  EXPECT_EQ(booked({{"memory", "20Gi"}, {"fraction", "250k"}}), "memory=20Gi gpu=0 20480Mi") << "the larger";
  EXPECT_EQ(booked({{"memory", "1Gi"}, {"fraction", "1M"}}), "fraction=1 gpu=0 40536Mi");
  const std::string at = std::string("claim team-a/trainer-gpu (uid ") + kUid +
                         "): status.allocation.devices.results[0].consumedCapacity.fraction: ";
  const std::string form = " is not a share of gpu-0; a fraction is 1 to 1M parts per million (250k is a quarter)";
  EXPECT_EQ(booked({{"memory", "1Gi"}, {"fraction", "2M"}}), at + "\"2M\"" + form);
  EXPECT_EQ(booked({{"memory", "1Gi"}, {"fraction", "0"}}), at + "\"0\"" + form);
  EXPECT_EQ(booked({{"memory", "1Gi"}, {"fraction", "0.25"}}), at + "\"0.25\"" + form);
  EXPECT_EQ(booked({{"memory", "1Gi"}, {"fraction", 250000}}), at + "not a quantity string");
}

}  // namespace
}  // namespace gpufrac::dra
