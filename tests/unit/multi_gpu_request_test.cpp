// Multi-GPU requests (docs/architecture.md "Requests and allocation"): the grammar of
// gpufrac.io/gpus and of gpufrac.io/gpu lists, through annotations and GPUFRAC_* variables. Every
// refusal is one line naming the key and the accepted form.
#include <gtest/gtest.h>

#include "core/request/env_request.hpp"
#include "core/request/request.hpp"

namespace gpufrac {
namespace {

Request ok(const Annotations& a) {
  auto r = parse_request(a, false);
  EXPECT_TRUE(r && *r) << (r ? "no request" : r.error().message);
  return r && *r ? **r : Request{};
}

std::string refused(const Annotations& a) {
  auto r = parse_request(a, false);
  EXPECT_FALSE(r) << "accepted: " << (r && *r ? (*r)->describe() : "no request");
  if (r) return "";
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  return r.error().message;
}

TEST(MultiGpuRequest, GpusAloneIsWholeGpus) {
  const Request r = ok({{"gpufrac.io/gpus", "2"}});
  EXPECT_EQ(r.gpu_count(), 2u);
  EXPECT_TRUE(r.multi_gpu());
  EXPECT_TRUE(r.sized_by_gpus);
  EXPECT_EQ(r.fraction, kWholeGpuPpm);
  EXPECT_EQ(r.describe(), "gpus=2");
  EXPECT_FALSE(ok({{"gpufrac.io/gpus", "1"}}).multi_gpu());
  EXPECT_EQ(ok({{"gpufrac.io/gpus", "16"}}).gpu_count(), 16u);
}

TEST(MultiGpuRequest, GpusWithASizeIsThatShareOnEachGpu) {
  const Request f = ok({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction", "0.5"}});
  EXPECT_EQ(f.kind, SizeKind::fraction);
  EXPECT_EQ(f.fraction, 500'000u);
  EXPECT_FALSE(f.sized_by_gpus);
  EXPECT_EQ(f.describe(), "fraction=0.5 gpus=2");
  const Request m = ok({{"gpufrac.io/gpus", "3"}, {"gpufrac.io/memory", "4Gi"}});
  EXPECT_EQ(m.memory_bytes, 4ull << 30);
  EXPECT_EQ(m.describe(), "memory=4Gi gpus=3");
  EXPECT_EQ(ok({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/compute", "30"}}).describe(), "compute=30 gpus=2");
}

TEST(MultiGpuRequest, PinListsMatchTheCount) {
  const Request r = ok({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "0,2"}});
  ASSERT_EQ(r.gpu_list.size(), 2u);
  EXPECT_FALSE(r.gpu);
  EXPECT_EQ(r.describe(), "fraction=0.5 gpus=2 gpu=0,2");
  const Request u = ok({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/gpu", "GPU-D7DABD4B-76EE-EB23-0267-A749DE0199B5,1"}});
  EXPECT_EQ(u.gpu_list[0].describe(), "GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5");
  const Request one = ok({{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "1"}});
  EXPECT_TRUE(one.gpu);
  EXPECT_TRUE(one.gpu_list.empty());
}

TEST(MultiGpuRequest, BadCountsAreOneLineWithTheAcceptedForm) {
  for (const char* bad : {"0", "17", "9999"})
    EXPECT_EQ(refused({{"gpufrac.io/gpus", bad}}),
              std::string("gpufrac.io/gpus: \"") + bad +
                  "\" is out of range; use a whole number of GPUs from 1 to 16, e.g. 2")
        << bad;
  for (const char* bad : {"", "02", "-1", "+2", "2.0", "two", " 2", "2 ", "0x2", "100000"})
    EXPECT_EQ(refused({{"gpufrac.io/gpus", bad}}),
              std::string("gpufrac.io/gpus: \"") + bad +
                  "\" is not a number of GPUs; use a whole number of GPUs from 1 to 16, e.g. 2")
        << bad;
}

TEST(MultiGpuRequest, PinsThatDoNotMatchAreRefused) {
  EXPECT_EQ(refused({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/gpu", "0"}}),
            "gpufrac.io/gpu: \"0\" names 1 GPU and gpufrac.io/gpus asks for 2; name exactly as many GPUs, "
            "comma-separated, e.g. 0,1");
  EXPECT_EQ(refused({{"gpufrac.io/gpus", "3"}, {"gpufrac.io/gpu", "0,1"}}),
            "gpufrac.io/gpu: \"0,1\" names 2 GPUs and gpufrac.io/gpus asks for 3; name exactly as many GPUs, "
            "comma-separated, e.g. 0,1,...");
  EXPECT_EQ(refused({{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "0,1"}}),
            "gpufrac.io/gpu: \"0,1\" names 2 GPUs; add gpufrac.io/gpus: 2 to book them together");
  EXPECT_EQ(refused({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/gpu", "1,1"}}),
            "gpufrac.io/gpu: \"1,1\" names GPU 1 twice; name each GPU once");
  EXPECT_NE(refused({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/gpu", "0,"}}).find("gpufrac.io/gpu: "), std::string::npos);
  EXPECT_NE(refused({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/gpu", "0,x"}}).find("gpufrac.io/gpu: "), std::string::npos);
}

TEST(MultiGpuRequest, MigProfilesAreOneDevice) {
  EXPECT_EQ(refused({{"gpufrac.io/gpus", "2"}, {"gpufrac.io/mig-profile", "1g.10gb"}}),
            "gpufrac.io/gpus: does not apply to gpufrac.io/mig-profile (a MIG instance is one device of one GPU); "
            "use it with gpufrac.io/fraction, gpufrac.io/memory or gpufrac.io/compute, or on its own");
}

TEST(MultiGpuRequest, DockerVariablesNameThemselves) {
  auto r = parse_container_request({}, {"GPUFRAC_GPUS=2", "GPUFRAC_FRACTION=0.5"}, false);
  ASSERT_TRUE(r && *r) << (r ? "none" : r.error().message);
  EXPECT_EQ((*r)->describe(), "fraction=0.5 gpus=2");
  auto bad = parse_container_request({}, {"GPUFRAC_GPUS=two"}, false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "GPUFRAC_GPUS: \"two\" is not a number of GPUs; use a whole number of GPUs from 1 to 16, e.g. 2");
  auto pins = parse_container_request({}, {"GPUFRAC_GPUS=2", "GPUFRAC_GPU=0"}, false);
  ASSERT_FALSE(pins);
  EXPECT_EQ(pins.error().message,
            "GPUFRAC_GPU: \"0\" names 1 GPU and GPUFRAC_GPUS asks for 2; name exactly as many GPUs, comma-separated, "
            "e.g. 0,1");
  auto mixed = parse_container_request({{"gpufrac.io/gpus", "2"}}, {"GPUFRAC_GPUS=2"}, false);
  EXPECT_FALSE(mixed);
}

}  // namespace
}  // namespace gpufrac
