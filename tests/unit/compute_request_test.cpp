// Compute requests (docs/architecture.md "Compute share"): gpufrac.io/compute, compute-mode and
// priority and their GPUFRAC_* variables, accepted beside a memory size or on their own, refused
// in one line naming the key and the accepted form.
#include <gtest/gtest.h>

#include "core/request/compute_share.hpp"
#include "core/request/env_request.hpp"
#include "core/request/request.hpp"
#include "core/request/unknown_keys.hpp"

namespace gpufrac {
namespace {

constexpr const char* kComputeTail = "; use an integer percent of the GPU's time from 1 to 100, e.g. 30";
constexpr const char* kShareKeys =
    "gpufrac.io/fraction, gpufrac.io/memory, gpufrac.io/mig-profile (aliases count as these), gpufrac.io/compute or "
    "gpufrac.io/gpus";
constexpr const char* kMigTail =
    " (a MIG instance owns its share of the GPU's time); use it with gpufrac.io/fraction or gpufrac.io/memory, or on "
    "its own";

// Request::describe(), or "error: " and the exact message.
std::string parsed(const Annotations& a) {
  auto r = parse_request(a, true);
  if (!r) return "error: " + r.error().message;
  return *r ? (*r)->describe() : "-";
}

std::string from_env(const std::vector<std::string>& env, const Annotations& a = {}) {
  auto r = parse_container_request(a, env, true);
  if (!r) return "error: " + r.error().message;
  return *r ? (*r)->describe() : "-";
}

Annotations compute(const std::string& v) {
  return {{"gpufrac.io/compute", v}};
}

TEST(ComputeRequest, AloneItIsAlsoTheMemoryShare) {
  auto r = parse_request(compute("30"), true);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->kind, SizeKind::fraction);
  EXPECT_EQ((*r)->fraction, 300'000u);
  EXPECT_EQ((*r)->compute_ppm, 300'000u);
  EXPECT_TRUE((*r)->sized_by_compute);
  EXPECT_EQ((*r)->describe(), "compute=30");
  EXPECT_EQ(parsed(compute("1")), "compute=1");
  auto whole = parse_request(compute("100"), true);  // all of the time is all of the GPU
  ASSERT_TRUE(whole && *whole);
  EXPECT_EQ((*whole)->fraction, kWholeGpuPpm);
  EXPECT_EQ((*whole)->describe(), "compute=100");
}

TEST(ComputeRequest, BesideASize) {
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute", "30"}}), "fraction=0.25 compute=30");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "4Gi"},
                    {"gpufrac.io/compute", "30"},
                    {"gpufrac.io/compute-mode", "strict"},
                    {"gpufrac.io/priority", "high"},
                    {"gpufrac.io/gpu", "1"},
                    {"gpufrac.io/policy", "spread"}}),
            "memory=4Gi compute=30 compute-mode=strict priority=high gpu=1 policy=spread");
  EXPECT_EQ(parsed({{"gpu-fraction", "0.5"}, {"gpufrac.io/compute", "10"}}), "fraction=0.5 compute=10");
  // A mode or priority alone leaves the weight to the default share (allocation.compute).
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute-mode", "fair"}}),
            "fraction=0.25 compute-mode=fair");
  auto r = parse_request({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/priority", "normal"}}, true);
  ASSERT_TRUE(r && *r);
  EXPECT_FALSE((*r)->compute_ppm);
  EXPECT_EQ((*r)->priority, ComputePriority::normal);
  EXPECT_TRUE((*r)->compute_intent());
  EXPECT_FALSE(parse_request({{"gpufrac.io/memory", "4Gi"}}, true).value()->compute_intent());
  // Compute alone with a pin and a policy.
  EXPECT_EQ(parsed({{"gpufrac.io/compute", "50"}, {"gpufrac.io/gpu", "0"}, {"gpufrac.io/priority", "high"}}),
            "compute=50 priority=high gpu=0");
}

TEST(ComputeRequest, BadPercentsAreRefused) {
  for (const char* v : {"abc", "30.5", "+30", "-1", "030", " 30", "30 ", "30%", "", "0x1e", "1e1"})
    EXPECT_EQ(parsed(compute(v)),
              "error: gpufrac.io/compute: \"" + std::string(v) + "\" is not a percent" + kComputeTail)
        << v;
  for (const char* v : {"0", "101", "1000", "99999999999999999999999"})
    EXPECT_EQ(parsed(compute(v)),
              "error: gpufrac.io/compute: \"" + std::string(v) + "\" is out of range" + kComputeTail)
        << v;
  // Beside a size, the same words.
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/compute", "0"}}),
            std::string("error: gpufrac.io/compute: \"0\" is out of range") + kComputeTail);
  EXPECT_EQ(parsed(compute(std::string(300, '3'))), "error: gpufrac.io/compute: \"" + std::string(64, '3') +
                                                        "...\" (300 bytes) is too long (at most 256 bytes)" +
                                                        kComputeTail);
}

TEST(ComputeRequest, ModesAndPriorities) {
  EXPECT_EQ(parsed({{"gpufrac.io/compute", "30"}, {"gpufrac.io/compute-mode", "Strict"}}),
            "error: gpufrac.io/compute-mode: \"Strict\" is not a compute mode; use fair or strict");
  EXPECT_EQ(parsed({{"gpufrac.io/compute", "30"}, {"gpufrac.io/priority", "low"}}),
            "error: gpufrac.io/priority: \"low\" is not a priority; use normal or high");
  EXPECT_EQ(parsed({{"gpufrac.io/compute-mode", "strict"}}),
            std::string("error: gpufrac.io/compute-mode: is set without a size; add ") + kShareKeys);
  EXPECT_EQ(parsed({{"gpufrac.io/priority", "high"}}),
            std::string("error: gpufrac.io/priority: is set without a size; add ") + kShareKeys);
  EXPECT_EQ(parsed({{"gpufrac.io/priority", "high"}, {"gpufrac.io/compute-mode", "strict"}}),
            std::string("error: gpufrac.io/compute-mode: is set without a size; add ") + kShareKeys);
}

TEST(ComputeRequest, NotWithMigProfile) {
  EXPECT_EQ(parsed({{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpufrac.io/compute", "30"}}),
            std::string("error: gpufrac.io/compute: does not apply to gpufrac.io/mig-profile") + kMigTail);
  EXPECT_EQ(parsed({{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpufrac.io/compute-mode", "strict"}}),
            std::string("error: gpufrac.io/compute-mode: does not apply to gpufrac.io/mig-profile") + kMigTail);
  EXPECT_EQ(parsed({{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpufrac.io/priority", "high"}}),
            std::string("error: gpufrac.io/priority: does not apply to gpufrac.io/mig-profile") + kMigTail);
}

TEST(ComputeRequest, TwoSizesStayTwoSizes) {
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/compute", "30"}}),
            "error: gpufrac.io/fraction and gpufrac.io/memory: both set; set only one of gpufrac.io/fraction, "
            "gpufrac.io/memory or gpufrac.io/mig-profile (aliases count as these)");
}

TEST(ComputeRequest, TheEnvironmentNamesTheVariable) {
  EXPECT_EQ(from_env({"GPUFRAC_COMPUTE=30"}), "compute=30");
  EXPECT_EQ(
      from_env({"GPUFRAC_MEMORY=4Gi", "GPUFRAC_COMPUTE=30", "GPUFRAC_COMPUTE_MODE=strict", "GPUFRAC_PRIORITY=high"}),
      "memory=4Gi compute=30 compute-mode=strict priority=high");
  EXPECT_EQ(from_env({"GPUFRAC_COMPUTE=101"}),
            std::string("error: GPUFRAC_COMPUTE: \"101\" is out of range") + kComputeTail);
  EXPECT_EQ(from_env({"GPUFRAC_FRACTION=0.5", "GPUFRAC_COMPUTE_MODE=lax"}),
            "error: GPUFRAC_COMPUTE_MODE: \"lax\" is not a compute mode; use fair or strict");
  EXPECT_EQ(from_env({"GPUFRAC_PRIORITY=high"}),
            "error: GPUFRAC_PRIORITY: is set without a size; add GPUFRAC_FRACTION, GPUFRAC_MEMORY, "
            "GPUFRAC_MIG_PROFILE, GPUFRAC_COMPUTE or GPUFRAC_GPUS");
  EXPECT_EQ(from_env({"GPUFRAC_MIG_PROFILE=1g.10gb", "GPUFRAC_COMPUTE=30"}),
            "error: GPUFRAC_COMPUTE: does not apply to GPUFRAC_MIG_PROFILE (a MIG instance owns its share of the "
            "GPU's time); use it with GPUFRAC_FRACTION or GPUFRAC_MEMORY, or on its own");
  EXPECT_EQ(from_env({"GPUFRAC_COMPUTE=30"}, {{"gpufrac.io/fraction", "0.25"}}),
            "error: gpufrac.io/fraction and GPUFRAC_COMPUTE: a request both by annotation and by environment; use one "
            "of them");
  EXPECT_EQ(from_env({"GPUFRAC_COMPUTE=30", "GPUFRAC_COMPUTE=40"}),
            "error: GPUFRAC_COMPUTE: set twice in the container's environment (\"30\" and \"40\"); set it once");
  EXPECT_TRUE(has_container_request({}, {"GPUFRAC_PRIORITY=high"}, true));
  auto w = unknown_request_names({}, {"GPUFRAC_COMPUT=30", "GPUFRAC_COMPUTE=30"});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].message.find("(did you mean GPUFRAC_COMPUTE?)"), std::string::npos) << w[0].message;
  EXPECT_EQ(env_name_for("gpufrac.io/compute-mode"), "GPUFRAC_COMPUTE_MODE");
}

TEST(ComputeShare, PercentText) {
  EXPECT_EQ(format_compute(300'000), "30 %");
  EXPECT_EQ(format_compute(0), "0 %");
  EXPECT_EQ(format_compute(1'000'000), "100 %");
  EXPECT_EQ(format_compute(333'333), "33.3333 %");
  EXPECT_EQ(format_compute(250'500), "25.05 %");
  EXPECT_EQ(format_compute(1), "0.0001 %");
  EXPECT_EQ(format_compute_percent(70'000), "7");
  EXPECT_EQ(booked_text(4ull << 30, 0), "4.0 GiB");
  EXPECT_EQ(booked_text(4ull << 30, 100'000), "4.0 GiB and 10 % of its time");
}

}  // namespace
}  // namespace gpufrac
