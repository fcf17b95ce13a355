// Burstable memory requests (docs/architecture.md "Burstable memory"): a limit above the request in
// every form (annotation, GPUFRAC_* variable, KAI-Scheduler's .limit aliases, NVIDIA's two
// variables), on-limit: wait with its timeout, and every refusal in one line naming the keys.
#include <gtest/gtest.h>

#include "core/request/burst_request.hpp"
#include "core/request/env_request.hpp"
#include "core/request/request.hpp"
#include "core/request/unknown_keys.hpp"

namespace gpufrac {
namespace {

// Request::describe(), or "error: " and the exact message.
std::string parsed(const Annotations& a, bool aliases = true) {
  auto r = parse_request(a, aliases);
  if (!r) return "error: " + r.error().message;
  return *r ? (*r)->describe() : "-";
}

std::string from_env(const std::vector<std::string>& env, const Annotations& a = {}, bool aliases = true) {
  auto r = parse_container_request(a, env, aliases);
  if (!r) return "error: " + r.error().message;
  return *r ? (*r)->describe() : "-";
}

TEST(BurstRequest, AMemoryLimitAboveAMemoryRequest) {
  auto r = parse_request({{"gpufrac.io/memory", "10Gi"}, {"gpufrac.io/memory-limit", "30Gi"}}, true);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->memory_bytes, 10ull << 30);
  ASSERT_TRUE((*r)->limit);
  EXPECT_FALSE((*r)->limit->is_fraction);
  EXPECT_EQ((*r)->limit->bytes, 30ull << 30);
  EXPECT_FALSE((*r)->wait_ms);
  EXPECT_EQ((*r)->describe(), "memory=10Gi memory-limit=30Gi");
}

TEST(BurstRequest, AFractionLimitAboveAFractionRequest) {
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/fraction-limit", "0.75"}}),
            "fraction=0.25 fraction-limit=0.75");
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/fraction-limit", "1"}}),
            "fraction=0.25 fraction-limit=1");
}

TEST(BurstRequest, ALimitEqualToTheRequestIsNoLimit) {
  auto r = parse_request({{"gpufrac.io/memory", "10Gi"}, {"gpufrac.io/memory-limit", "10240Mi"}}, true);
  ASSERT_TRUE(r && *r);
  EXPECT_FALSE((*r)->limit);
  EXPECT_EQ((*r)->describe(), "memory=10Gi");
}

TEST(BurstRequest, TheKaiAliasesOnlyWithAliasesOn) {
  EXPECT_EQ(parsed({{"gpu-memory", "8192"}, {"gpu-memory.limit", "16384"}}), "memory=8Gi memory-limit=16Gi");
  EXPECT_EQ(parsed({{"gpu-fraction", "0.5"}, {"gpu-fraction.limit", "0.8"}}), "fraction=0.5 fraction-limit=0.8");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "8Gi"}, {"gpu-memory.limit", "16384"}}), "memory=8Gi memory-limit=16Gi");
  EXPECT_EQ(parsed({{"gpu-memory", "8192"}, {"gpu-memory.limit", "16384"}}, false), "-");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "8Gi"}, {"gpu-memory.limit", "16384"}}, false), "memory=8Gi");
  EXPECT_EQ(parsed({{"gpu-memory", "8192"}, {"gpu-memory.limit", "16Gi"}}),
            "error: gpu-memory.limit: \"16Gi\" is not a MiB amount; use a positive integer of MiB, e.g. 16384");
  EXPECT_EQ(parsed({{"gpu-fraction", "0.5"}, {"gpu-fraction.limit", "1.5"}}),
            "error: gpu-fraction.limit: \"1.5\" is out of range; use a decimal 0 < f <= 1 with at most 6 decimals, "
            "e.g. 0.25");
}

TEST(BurstRequest, OnLimitWaitWithItsTimeout) {
  auto r = parse_request(
      {{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/on-limit", "wait"}, {"gpufrac.io/on-limit-timeout", "5"}}, true);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->wait_ms, 5000u);
  EXPECT_EQ((*r)->describe(), "memory=4Gi on-limit=wait on-limit-timeout=5");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/on-limit", "wait"}}),
            "memory=4Gi on-limit=wait on-limit-timeout=30");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/on-limit", "fail"}}), "memory=4Gi");
}

TEST(BurstRequest, TheVariables) {
  EXPECT_EQ(from_env({"GPUFRAC_MEMORY=10Gi", "GPUFRAC_MEMORY_LIMIT=30Gi", "GPUFRAC_ON_LIMIT=wait",
                      "GPUFRAC_ON_LIMIT_TIMEOUT=5"}),
            "memory=10Gi memory-limit=30Gi on-limit=wait on-limit-timeout=5");
  EXPECT_EQ(from_env({"GPUFRAC_FRACTION=0.25", "GPUFRAC_FRACTION_LIMIT=0.5"}), "fraction=0.25 fraction-limit=0.5");
  EXPECT_EQ(from_env({"GPUFRAC_MEMORY_LIMIT=30Gi"}),
            "error: GPUFRAC_MEMORY_LIMIT: is set without a request; add a memory or fraction request beside it (what "
            "is booked; the limit is the most the share may use)");
  EXPECT_EQ(from_env({"GPUFRAC_MEMORY=10Gi", "GPUFRAC_MEMORY_LIMIT=8Gi"}),
            "error: GPUFRAC_MEMORY_LIMIT: \"8Gi\" is below the request (GPUFRAC_MEMORY \"10Gi\"); use a limit of at "
            "least the request");
  EXPECT_EQ(from_env({"GPUFRAC_MEMORY_LIMIT=30Gi"}, {{"gpufrac.io/memory", "10Gi"}}),
            "error: gpufrac.io/memory and GPUFRAC_MEMORY_LIMIT: a request both by annotation and by environment; use "
            "one of them");
  EXPECT_TRUE(unknown_request_names({{"gpufrac.io/memory-limit", "1Gi"}, {"gpufrac.io/on-limit", "wait"}},
                                    {"GPUFRAC_MEMORY_LIMIT=1Gi", "GPUFRAC_ON_LIMIT=wait", "GPUFRAC_FRACTION_LIMIT=1",
                                     "GPUFRAC_ON_LIMIT_TIMEOUT=5"})
                  .empty());
}

TEST(BurstRequest, NvidiasVariablesAreARequestOfTheirOwn) {
  EXPECT_EQ(from_env({"NVIDIA_GPU_MEMORY_REQUEST=8192", "NVIDIA_GPU_MEMORY_LIMIT=16384"}),
            "memory=8Gi memory-limit=16Gi");
  EXPECT_EQ(from_env({"NVIDIA_GPU_MEMORY_REQUEST=8192", "NVIDIA_GPU_MEMORY_LIMIT=8192"}), "memory=8Gi");
  EXPECT_TRUE(has_container_request({}, {"NVIDIA_GPU_MEMORY_REQUEST=8192", "NVIDIA_GPU_MEMORY_LIMIT=16384"}, true));
  EXPECT_FALSE(has_container_request({}, {"NVIDIA_GPU_MEMORY_REQUEST=8192", "NVIDIA_GPU_MEMORY_LIMIT=16384"}, false));
  EXPECT_EQ(from_env({"NVIDIA_GPU_MEMORY_REQUEST=8192", "NVIDIA_GPU_MEMORY_LIMIT=16384"}, {}, false), "-");
  EXPECT_EQ(from_env({"NVIDIA_GPU_MEMORY_LIMIT=16384"}),
            "error: NVIDIA_GPU_MEMORY_LIMIT: set without NVIDIA_GPU_MEMORY_REQUEST; set both, whole MiB (NVIDIA's "
            "toolkit ignores one alone), or use GPUFRAC_MEMORY");
  EXPECT_EQ(
      from_env({"NVIDIA_GPU_MEMORY_REQUEST=16384", "NVIDIA_GPU_MEMORY_LIMIT=8192"}),
      "error: NVIDIA_GPU_MEMORY_LIMIT: \"8192\" is below the request (NVIDIA_GPU_MEMORY_REQUEST \"16384\"); use a "
      "limit of at least the request");
  EXPECT_EQ(from_env({"NVIDIA_GPU_MEMORY_REQUEST=8Gi", "NVIDIA_GPU_MEMORY_LIMIT=16384"}),
            "error: NVIDIA_GPU_MEMORY_REQUEST: \"8Gi\" is not a MiB amount; use a positive integer of MiB, e.g. 4096");
  // Beside another request they are NVIDIA's hook's input, not a request (nvidia_memory_env.hpp).
  EXPECT_EQ(
      from_env({"NVIDIA_GPU_MEMORY_REQUEST=8192", "NVIDIA_GPU_MEMORY_LIMIT=16384"}, {{"gpufrac.io/fraction", "0.25"}}),
      "fraction=0.25");
  EXPECT_EQ(from_env({"GPUFRAC_MEMORY=4Gi", "NVIDIA_GPU_MEMORY_REQUEST=8192", "NVIDIA_GPU_MEMORY_LIMIT=16384"}),
            "memory=4Gi");
}

TEST(BurstRequest, BadCombinationsAreOneLineNamingTheKeys) {
  const std::string no_request =
      ": is set without a request; add a memory or fraction request beside it (what is booked; the limit is the "
      "most the share may use)";
  EXPECT_EQ(parsed({{"gpufrac.io/memory-limit", "8Gi"}}), "error: gpufrac.io/memory-limit" + no_request);
  EXPECT_EQ(parsed({{"gpu-fraction.limit", "0.5"}}), "error: gpu-fraction.limit" + no_request);
  EXPECT_EQ(parsed({{"gpufrac.io/compute", "30"}, {"gpufrac.io/fraction-limit", "0.5"}}),
            "error: gpufrac.io/fraction-limit" + no_request);
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "10Gi"}, {"gpufrac.io/memory-limit", "8Gi"}}),
            "error: gpufrac.io/memory-limit: \"8Gi\" is below the request (gpufrac.io/memory \"10Gi\"); use a limit "
            "of at least the request");
  EXPECT_EQ(parsed({{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpufrac.io/memory-limit", "20Gi"}}),
            "error: gpufrac.io/memory-limit: does not apply to gpufrac.io/mig-profile (a MIG instance's memory is its "
            "own); use it beside a memory or fraction request");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "10Gi"}, {"gpufrac.io/memory-limit", "20Gi"}, {"gpu-memory.limit", "20480"}}),
            "error: gpufrac.io/memory-limit and gpu-memory.limit: both set; set only one of gpufrac.io/memory-limit "
            "or gpufrac.io/fraction-limit (aliases count as these)");
  EXPECT_EQ(
      parsed(
          {{"gpufrac.io/memory", "10Gi"}, {"gpufrac.io/memory-limit", "20Gi"}, {"gpufrac.io/fraction-limit", "0.5"}}),
      "error: gpufrac.io/memory-limit and gpufrac.io/fraction-limit: both set; set only one of "
      "gpufrac.io/memory-limit or gpufrac.io/fraction-limit (aliases count as these)");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "10Gi"}, {"gpufrac.io/fraction-limit", "0.5"}}),
            "error: gpufrac.io/fraction-limit: is a fraction limit and gpufrac.io/memory a memory request; use "
            "gpufrac.io/memory-limit (the limit is of the request's kind)");
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "0.25"}, {"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction-limit", "0.5"}}),
            "error: gpufrac.io/fraction-limit: does not apply to gpufrac.io/gpus 2 (a limit above the request is for a "
            "share of one GPU); leave one of them out");
  EXPECT_EQ(parsed({{"gpufrac.io/fraction", "1"}, {"gpufrac.io/fraction-limit", "1"}}),
            "error: gpufrac.io/fraction-limit: does not apply to a whole GPU (gpufrac.io/fraction 1: nobody else is "
            "on it); ask for less than the whole GPU, or leave the limit out");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/on-limit", "block"}}),
            "error: gpufrac.io/on-limit: \"block\" is not an on-limit policy; use fail or wait");
  EXPECT_EQ(parsed({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/on-limit-timeout", "5"}}),
            "error: gpufrac.io/on-limit-timeout: is set without gpufrac.io/on-limit: wait; add it, or leave the "
            "timeout out");
  for (const char* bad : {"0", "3601", "05", "5s", "-1", ""})
    EXPECT_EQ(
        parsed({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/on-limit", "wait"}, {"gpufrac.io/on-limit-timeout", bad}}),
        std::string("error: gpufrac.io/on-limit-timeout: \"") + bad +
            "\" is not a timeout; use whole seconds from 1 to 3600, e.g. 5")
        << bad;
  EXPECT_EQ(parsed({{"gpufrac.io/on-limit", "wait"}}),
            "error: gpufrac.io/on-limit: is set without a size; add gpufrac.io/fraction, gpufrac.io/memory, "
            "gpufrac.io/mig-profile (aliases count as these), gpufrac.io/compute or gpufrac.io/gpus");
}

TEST(BurstRequest, TheNewKeysAreKnown) {
  EXPECT_TRUE(is_burst_key("gpufrac.io/memory-limit"));
  EXPECT_TRUE(is_burst_key("gpu-fraction.limit"));
  EXPECT_FALSE(is_burst_key("gpufrac.io/memory"));
  EXPECT_EQ(
      parsed({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/memory-limt", "8Gi"}}),
      "error: \"gpufrac.io/memory-limt\": unknown gpufrac annotation (did you mean gpufrac.io/memory-limit?); use "
      "gpufrac.io/fraction, gpufrac.io/memory, gpufrac.io/mig-profile, gpufrac.io/gpu, gpufrac.io/policy, "
      "gpufrac.io/compute, gpufrac.io/compute-mode, gpufrac.io/priority, gpufrac.io/gpus, gpufrac.io/memory-limit, "
      "gpufrac.io/fraction-limit, gpufrac.io/on-limit or gpufrac.io/on-limit-timeout");
}

}  // namespace
}  // namespace gpufrac
