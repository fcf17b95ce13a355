#include <gtest/gtest.h>

#include "core/mig/mig_profile_name.hpp"
#include "core/request/request.hpp"

namespace gpufrac {
namespace {

constexpr const char* kFractionTail = "; use a decimal 0 < f <= 1 with at most 6 decimals, e.g. 0.25";
constexpr const char* kMemoryTail =
    "; use an integer of MiB or a number with suffix Ki, Mi, Gi, Ti, k, M, G or T, e.g. 4Gi";
constexpr const char* kMigTail =
    "; use [<C>c.]<G>g.<GB>gb with optional +attr or -attr (me, me.all, gfx), e.g. 1g.10gb or 1g.10gb+me";
constexpr const char* kGpuTail =
    "; use a GPU index or GPU-<uuid> as nvidia-smi -L prints it, e.g. 0 or GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5";
constexpr const char* kSizing =
    "gpufrac.io/fraction, gpufrac.io/memory or gpufrac.io/mig-profile (aliases count as these)";
constexpr const char* kShareKeys =
    "gpufrac.io/fraction, gpufrac.io/memory, gpufrac.io/mig-profile (aliases count as these), gpufrac.io/compute or "
    "gpufrac.io/gpus";
constexpr const char* kKnownKeys =
    "; use gpufrac.io/fraction, gpufrac.io/memory, gpufrac.io/mig-profile, gpufrac.io/gpu, gpufrac.io/policy, "
    "gpufrac.io/compute, gpufrac.io/compute-mode, gpufrac.io/priority or gpufrac.io/gpus";
const std::string kUnknownTail = std::string(": unknown gpufrac annotation") + kKnownKeys;

struct Case {
  const char* name;
  Annotations annotations;
  bool aliases;
  std::string expected;  // Request::describe(), "-" for no request, or the exact error after "error: "
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::string fr(const std::string& v) {
  return "error: gpufrac.io/fraction: \"" + v + "\" is not a fraction" + kFractionTail;
}
std::string range(const std::string& v) {
  return "error: gpufrac.io/fraction: \"" + v + "\" is out of range" + kFractionTail;
}
std::string mem(const std::string& v, const std::string& why = "is not a memory quantity") {
  return "error: gpufrac.io/memory: \"" + v + "\" " + why + kMemoryTail;
}
std::string mig(const std::string& v) {
  return "error: gpufrac.io/mig-profile: \"" + v + "\" is not a MIG profile" + kMigTail;
}
std::string gpu(const std::string& v) {
  return "error: gpufrac.io/gpu: \"" + v + "\" is not a GPU" + kGpuTail;
}

const std::string kBig(10240, '5');
const std::string kBigShown = std::string(64, '5') + "...\" (10240 bytes)";

Annotations with(std::string key, std::string value) {
  return {{"gpufrac.io/" + key, value}};
}

const Case kCases[] = {
    {"empty map", {}, true, "-"},
    {"foreign keys only", {{"io.kubernetes.pod", "x"}, {"a", "b"}}, true, "-"},
    {"injected marker only", {{"gpufrac.io/injected", "anything at all"}}, true, "-"},
    {"fraction quarter", with("fraction", "0.25"), true, "fraction=0.25"},
    {"fraction whole", with("fraction", "1"), true, "fraction=1"},
    {"fraction 1.0", with("fraction", "1.0"), true, "fraction=1"},
    {"fraction smallest", with("fraction", "0.000001"), true, "fraction=0.000001"},
    {"fraction empty", with("fraction", ""), true, fr("")},
    {"fraction zero", with("fraction", "0"), true, range("0")},
    {"fraction negative", with("fraction", "-0.1"), true, fr("-0.1")},
    {"fraction above one", with("fraction", "1.0001"), true, range("1.0001")},
    {"fraction 1.5", with("fraction", "1.5"), true, range("1.5")},
    {"fraction NaN", with("fraction", "NaN"), true, fr("NaN")},
    {"fraction inf", with("fraction", "inf"), true, fr("inf")},
    {"fraction tiny exponent", with("fraction", "1e-400"), true, fr("1e-400")},
    {"fraction hex float", with("fraction", "0x1p-2"), true, fr("0x1p-2")},
    {"fraction leading space", with("fraction", " 0.5"), true, fr(" 0.5")},
    {"fraction trailing space", with("fraction", "0.5 "), true, fr("0.5 ")},
    {"fraction letters", with("fraction", "abc"), true, fr("abc")},
    {"fraction seven decimals", with("fraction", "0.0000001"), true, fr("0.0000001")},
    {"fraction non-ASCII", with("fraction", "0.\xef\xbc\x95"), true, fr("0.\\xef\\xbc\\x95")},
    {"fraction 10 kB", with("fraction", kBig), true,
     "error: gpufrac.io/fraction: \"" + kBigShown + " is too long (at most 256 bytes)" + kFractionTail},
    {"memory Gi", with("memory", "4Gi"), true, "memory=4Gi"},
    {"memory bare MiB", with("memory", "4096"), true, "memory=4Gi"},
    {"memory Ki", with("memory", "4194304Ki"), true, "memory=4Gi"},
    {"memory Mi", with("memory", "1536Mi"), true, "memory=1536Mi"},
    {"memory decimal Gi", with("memory", "1.5Gi"), true, "memory=1536Mi"},
    {"memory Ti", with("memory", "1Ti"), true, "memory=1Ti"},
    {"memory k", with("memory", "512000k"), true, "memory=512M"},
    {"memory M", with("memory", "1500M"), true, "memory=1500M"},
    {"memory G", with("memory", "4G"), true, "memory=4G"},
    {"memory T", with("memory", "2T"), true, "memory=2T"},
    {"memory zero", with("memory", "0"), true, mem("0", "is zero")},
    {"memory gb suffix", with("memory", "4gb"), true, mem("4gb")},
    {"memory negative", with("memory", "-4Gi"), true, mem("-4Gi")},
    {"memory too large", with("memory", "2048Ti"), true, mem("2048Ti", "is too large (at most 1 PiB)")},
    {"memory 10 kB", with("memory", kBig), true,
     "error: gpufrac.io/memory: \"" + kBigShown + " is too long (at most 256 bytes)" + kMemoryTail},
    {"mig plain", with("mig-profile", "1g.10gb"), true, "mig-profile=1g.10gb"},
    {"mig C equals G", with("mig-profile", "3c.3g.20gb"), true, "mig-profile=3g.20gb"},
    {"mig compute sub-profile", with("mig-profile", "1c.2g.20gb"), true, "mig-profile=1c.2g.20gb"},
    {"mig +me", with("mig-profile", "1g.10gb+me"), true, "mig-profile=1g.10gb+me"},
    {"mig +me.all", with("mig-profile", "2g.48gb+me.all"), true, "mig-profile=2g.48gb+me.all"},
    {"mig +gfx,me", with("mig-profile", "1g.24gb+gfx,me"), true, "mig-profile=1g.24gb+gfx,me"},
    {"mig -me", with("mig-profile", "1g.24gb-me"), true, "mig-profile=1g.24gb-me"},
    {"mig + and -", with("mig-profile", "1g.10gb+me-gfx"), true, mig("1g.10gb+me-gfx")},
    {"mig repeated attr", with("mig-profile", "1g.10gb+me,me"), true, mig("1g.10gb+me,me")},
    {"mig unknown attr", with("mig-profile", "1g.10gb+foo"), true, mig("1g.10gb+foo")},
    {"mig C above G", with("mig-profile", "4c.2g.20gb"), true, mig("4c.2g.20gb")},
    {"mig G above 8", with("mig-profile", "9g.90gb"), true, mig("9g.90gb")},
    {"mig leading zero", with("mig-profile", "01g.10gb"), true, mig("01g.10gb")},
    {"mig upper case", with("mig-profile", "1g.10GB"), true, mig("1g.10GB")},
    {"mig empty", with("mig-profile", ""), true, mig("")},
    {"pin index", {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "1"}}, true, "fraction=0.5 gpu=1"},
    {"pin uuid lower-cased",
     {{"gpufrac.io/memory", "8Gi"}, {"gpufrac.io/gpu", "GPU-D7DABD4B-76EE-EB23-0267-A749DE0199B5"}},
     true,
     "memory=8Gi gpu=GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5"},
    {"pin with mig profile",
     {{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpufrac.io/gpu", "0"}},
     true,
     "mig-profile=1g.10gb gpu=0"},
    {"pin leading zero", {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "01"}}, true, gpu("01")},
    {"pin negative", {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "-1"}}, true, gpu("-1")},
    {"pin short uuid", {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "GPU-d7dabd4b"}}, true, gpu("GPU-d7dabd4b")},
    {"pin MIG uuid",
     {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/gpu", "MIG-4abe8dfe-56e0-1af9-c15d-053625ecbfe1"}},
     true,
     gpu("MIG-4abe8dfe-56e0-1af9-c15d-053625ecbfe1")},
    {"pin without size", with("gpu", "0"), true,
     std::string("error: gpufrac.io/gpu: is set without a size; add ") + kShareKeys},
    {"policy spread",
     {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/policy", "spread"}},
     true,
     "fraction=0.5 policy=spread"},
    {"policy binpack",
     {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/policy", "binpack"}},
     true,
     "fraction=0.5 policy=binpack"},
    {"policy capitalised",
     {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/policy", "Spread"}},
     true,
     "error: gpufrac.io/policy: \"Spread\" is not a policy; use binpack or spread"},
    {"two sizing keys",
     {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/memory", "4Gi"}},
     true,
     std::string("error: gpufrac.io/fraction and gpufrac.io/memory: both set; set only one of ") + kSizing},
    {"sizing key and alias",
     {{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpu-fraction", "0.5"}},
     true,
     std::string("error: gpufrac.io/mig-profile and gpu-fraction: both set; set only one of ") + kSizing},
    {"sizing key and alias, aliases off",
     {{"gpufrac.io/mig-profile", "1g.10gb"}, {"gpu-fraction", "0.5"}},
     false,
     "mig-profile=1g.10gb"},
    {"two aliases",
     {{"gpu-memory", "4096"}, {"clearml-injector/fraction", "0.5"}},
     true,
     std::string("error: gpu-memory and clearml-injector/fraction: both set; set only one of ") + kSizing},
    // A compute instance of a GPU instance may name the memory it books of the GPU instance's.
    {"compute instance with memory",
     {{"gpufrac.io/mig-profile", "1c.3g.40gb"}, {"gpufrac.io/memory", "8Gi"}},
     true,
     "mig-profile=1c.3g.40gb memory=8Gi"},
    {"whole GPU instance with memory",
     {{"gpufrac.io/mig-profile", "3c.3g.40gb"}, {"gpufrac.io/memory", "8Gi"}},
     true,
     "error: gpufrac.io/memory: does not apply to gpufrac.io/mig-profile 3g.40gb (a whole GPU instance's memory is "
     "its own); name a compute instance of it, e.g. 1c.3g.40gb, or leave it out"},
    {"compute instance with bad memory",
     {{"gpufrac.io/mig-profile", "1c.3g.40gb"}, {"gpufrac.io/memory", "8gb"}},
     true,
     mem("8gb")},
    {"compute instance with fraction",
     {{"gpufrac.io/mig-profile", "1c.3g.40gb"}, {"gpufrac.io/fraction", "0.5"}},
     true,
     std::string("error: gpufrac.io/fraction and gpufrac.io/mig-profile: both set; set only one of ") + kSizing},
    {"compute instance with gpu-memory",
     {{"gpufrac.io/mig-profile", "1c.3g.40gb"}, {"gpu-memory", "4096"}},
     true,
     std::string("error: gpufrac.io/mig-profile and gpu-memory: both set; set only one of ") + kSizing},
    {"alias gpu-fraction", {{"gpu-fraction", "0.5"}}, true, "fraction=0.5"},
    {"alias gpu-fraction off", {{"gpu-fraction", "0.5"}}, false, "-"},
    {"alias gpu-fraction bad",
     {{"gpu-fraction", "1.5"}},
     true,
     std::string("error: gpu-fraction: \"1.5\" is out of range") + kFractionTail},
    {"alias gpu-memory MiB", {{"gpu-memory", "4096"}}, true, "memory=4Gi"},
    {"alias gpu-memory suffix",
     {{"gpu-memory", "4Gi"}},
     true,
     "error: gpu-memory: \"4Gi\" is not a MiB amount; use a positive integer of MiB, e.g. 4096"},
    {"alias gpu-memory zero",
     {{"gpu-memory", "0"}},
     true,
     "error: gpu-memory: \"0\" is not a MiB amount; use a positive integer of MiB, e.g. 4096"},
    {"alias gpu-memory bad, aliases off", {{"gpu-memory", "lots"}}, false, "-"},
    {"alias clearml", {{"clearml-injector/fraction", "0.125"}}, true, "fraction=0.125"},
    {"alias clearml three decimals", {{"clearml-injector/fraction", "0.250"}}, true, "fraction=0.25"},
    {"unknown key",
     {{"gpufrac.io/fractoin", "0.5"}},
     true,
     std::string("error: \"gpufrac.io/fractoin\": unknown gpufrac annotation (did you mean gpufrac.io/fraction?)") +
         kKnownKeys},
    {"unknown key beside a valid one",
     {{"gpufrac.io/fraction", "0.5"}, {"gpufrac.io/cores", "50"}},
     true,
     std::string("error: \"gpufrac.io/cores\"") + kUnknownTail},
    {"unknown key, aliases off", {{"gpufrac.io/x", "1"}}, false, std::string("error: \"gpufrac.io/x\"") + kUnknownTail},
    {"injected beside a request", {{"gpufrac.io/injected", "1"}, {"gpufrac.io/fraction", "0.5"}}, true, "fraction=0.5"},
    {"key prefix look-alike", {{"gpufrac.io", "x"}, {"gpufrac.iox/fraction", "2"}}, true, "-"},
};

class RequestTable : public ::testing::TestWithParam<Case> {};

TEST_P(RequestTable, ParsesOrRefuses) {
  const Case& c = GetParam();
  auto r = parse_request(c.annotations, c.aliases);
  if (c.expected.starts_with("error: ")) {
    ASSERT_FALSE(r.has_value()) << (r->has_value() ? (*r)->describe() : "no request");
    EXPECT_EQ("error: " + r.error().message, c.expected);
    EXPECT_EQ(r.error().kind, ErrorKind::user);
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    return;
  }
  ASSERT_TRUE(r.has_value()) << r.error().message;
  if (c.expected == "-") {
    EXPECT_FALSE(r->has_value()) << (*r)->describe();
    EXPECT_FALSE(has_gpufrac_request(c.annotations, c.aliases));
    return;
  }
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->describe(), c.expected);
  EXPECT_TRUE(has_gpufrac_request(c.annotations, c.aliases));
}

INSTANTIATE_TEST_SUITE_P(Annotations, RequestTable, ::testing::ValuesIn(kCases));

TEST(Request, FieldsOfAParsedRequest) {
  auto r =
      parse_request({{"gpufrac.io/memory", "4Gi"}, {"gpufrac.io/gpu", "3"}, {"gpufrac.io/policy", "spread"}}, true);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->kind, SizeKind::memory);
  EXPECT_EQ((*r)->memory_bytes, 4ull << 30);
  EXPECT_EQ((*r)->gpu, (GpuPin{3, ""}));
  EXPECT_EQ((*r)->policy, Policy::spread);
  auto m = parse_request({{"gpufrac.io/mig-profile", "7c.7g.80gb"}}, true);
  ASSERT_TRUE(m && *m);
  EXPECT_EQ((*m)->kind, SizeKind::mig_profile);
  EXPECT_EQ((*m)->mig_profile, "7g.80gb");
}

TEST(Request, OnlyOwnKeysOfAHugeMapAreRead) {
  Annotations a;
  for (int i = 0; i < 100000; ++i) a["example.com/key-" + std::to_string(i)] = std::string(300, 'x');
  a["gpufrac.io/fraction"] = "0.5";
  auto r = parse_request(a, true);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->fraction, 500000u);
}

TEST(Request, UnknownKeyIsQuotedAndBounded) {
  auto r = parse_request({{"gpufrac.io/" + std::string(10000, 'k'), "1"}}, true);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "\"gpufrac.io/" + std::string(53, 'k') + "...\" (10011 bytes)" + kUnknownTail);
}

TEST(Request, FastPathSeesAnyOwnKey) {
  EXPECT_FALSE(has_gpufrac_request({}, true));
  EXPECT_FALSE(has_gpufrac_request({{"gpufrac.io/injected", "1"}, {"gpu-fraction", "0.5"}}, false));
  EXPECT_TRUE(has_gpufrac_request({{"gpufrac.io/injected", "1"}, {"gpu-fraction", "0.5"}}, true));
  EXPECT_TRUE(has_gpufrac_request({{"gpufrac.io/typo", "1"}}, false));
  EXPECT_TRUE(has_gpufrac_request({{"clearml-injector/fraction", "0.5"}}, true));
}

TEST(MigProfileName, Canonicalises) {
  EXPECT_EQ(*canonical_mig_profile("7c.7g.40gb"), "7g.40gb");
  EXPECT_EQ(*canonical_mig_profile("1c.7g.40gb"), "1c.7g.40gb");
  EXPECT_EQ(*canonical_mig_profile("1g.5gb+me"), "1g.5gb+me");
  EXPECT_FALSE(canonical_mig_profile("1g.10gb+"));
  EXPECT_FALSE(canonical_mig_profile("1g.10gb+me,"));
  EXPECT_FALSE(canonical_mig_profile("1g.10gb-"));
  EXPECT_FALSE(canonical_mig_profile("0g.10gb"));
  EXPECT_FALSE(canonical_mig_profile("1g.0gb"));
  EXPECT_FALSE(canonical_mig_profile("1g.12345gb"));
  EXPECT_FALSE(canonical_mig_profile("1c.g.10gb"));
  EXPECT_FALSE(canonical_mig_profile("1g10gb"));
}

}  // namespace
}  // namespace gpufrac
