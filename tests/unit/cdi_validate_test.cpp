// `gpufrac cdi validate`: one crafted bad spec per rule in tests/fixtures/cdi/bad/ (each states its
// exact messages in "# expect: " lines), the good specs in tests/fixtures/cdi/good/, and the
// version computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "cdi/spec_file.hpp"
#include "cdi/spec_lines.hpp"
#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "cdi_test_util.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cdi {
namespace {

using test::source_path;
using Json = nlohmann::ordered_json;

std::vector<std::string> fixtures(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_path("tests/fixtures/cdi/" + dir)))
    out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> expected(const std::string& file) {
  std::vector<std::string> out;
  for (const auto& line : text::split(*fs::read_file(file), '\n'))
    if (line.starts_with("# expect: ")) out.push_back(line.substr(10));
  return out;
}

// What `gpufrac cdi validate` reports for the file, without the "<file>: " prefix.
std::vector<std::string> reported(const std::string& file) {
  auto spec = read_spec_file(file);
  if (!spec) return {spec.error().message.substr(file.size() + 2)};
  std::vector<std::string> out;
  for (const auto& p : validate_spec(*spec)) out.push_back(format_problem(p));
  return out;
}

TEST(CdiValidate, EveryBadSpecIsRejectedWithItsMessage) {
  auto files = fixtures("bad");
  EXPECT_GE(files.size(), 29u);
  for (const auto& f : files) {
    auto want = expected(f);
    ASSERT_FALSE(want.empty()) << f << " has no # expect: line";
    EXPECT_EQ(reported(f), want) << f;
    auto spec = read_spec_file(f);
    if (spec) {
      EXPECT_TRUE(has_errors(validate_spec(*spec))) << f;
    }
  }
}

TEST(CdiValidate, GoodSpecsPassWithTheirWarnings) {
  for (const auto& f : fixtures("good")) {
    auto spec = read_spec_file(f);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_FALSE(has_errors(validate_spec(*spec))) << f;
    if (f.ends_with(".yaml")) {
      EXPECT_EQ(reported(f), expected(f)) << f;
    }
  }
  EXPECT_EQ(reported(source_path("tests/fixtures/cdi/good/every-field-1.1.0.json")),
            std::vector<std::string>{"cdiVersion: warning: \"v1.1.0\" is newer than 0.5.0, the newest podman 4.3.1 "
                                     "(CDI library v0.5.2) reads; this spec needs 1.1.0 for "
                                     "devices[0].containerEdits.netDevices (netDevices)"});
}

std::vector<std::string> problems_of(const std::string& json) {
  std::vector<std::string> out;
  for (const auto& p : validate_spec(Json::parse(json))) out.push_back(format_problem(p));
  return out;
}

TEST(CdiValidate, FieldTypesAndNulls) {
  EXPECT_EQ(problems_of(R"({"cdiVersion":"0.3.0","kind":"ab/cd","devices":[{"name":"x","containerEdits":{
      "env":"A=1","deviceNodes":[{"path":"/dev/x","uid":-1,"fileMode":1.5}],"hooks":{}}}]})"),
            (std::vector<std::string>{
                "devices[0].containerEdits.env: must be a list of strings",
                "devices[0].containerEdits.deviceNodes[0].uid: must be an integer from 0 to 4294967295",
                "devices[0].containerEdits.deviceNodes[0].fileMode: must be an integer from 0 to 4294967295",
                "devices[0].containerEdits.hooks: must be a list of maps"}));
  // null is Go's zero value: an absent optional field, a missing required one.
  EXPECT_EQ(problems_of(R"({"cdiVersion":"0.3.0","kind":"ab/cd","annotations":null,"devices":[{"name":null,
      "containerEdits":{"env":["A=1"]}}]})"),
            std::vector<std::string>{"devices[0].name: missing; a device needs it"});
  EXPECT_EQ(problems_of(R"([1])"), std::vector<std::string>{"must be a map (a spec)"});
}

TEST(CdiValidate, IntelRdtAndNetDevices) {
  EXPECT_EQ(problems_of(R"({"cdiVersion":"1.1.0","kind":"ab/cd","devices":[{"name":"x","containerEdits":{
      "intelRdt":{"closID":"a/b"},"netDevices":[{"hostInterfaceName":"eth0","name":"n"},
      {"hostInterfaceName":"eth0","name":""}]}}]})"),
            (std::vector<std::string>{
                "cdiVersion: warning: \"1.1.0\" is newer than 0.5.0, the newest podman 4.3.1 (CDI library v0.5.2) "
                "reads; this spec needs 1.1.0 for devices[0].containerEdits.netDevices (netDevices)",
                "devices[0].containerEdits.intelRdt.closID: \"a/b\" is not a closID; use a file name, or / for the "
                "root class",
                "devices[0].containerEdits.netDevices[1].hostInterfaceName: \"eth0\" appears twice",
                "devices[0].containerEdits.netDevices[1].name: empty; use an interface name"}));
}

TEST(CdiVersion, MinimumLikeSpecsGo) {
  auto need = [](const std::string& json) { return required_version(Json::parse(json)); };
  const std::string dev = R"("devices":[{"name":"gpu","containerEdits":{"env":["A=1"]}}])";
  EXPECT_EQ(need(R"({"kind":"ab/cd",)" + dev + "}").version, "0.3.0");
  auto v =
      need(R"({"kind":"ab/cd","containerEdits":{"mounts":[{"hostPath":"t","containerPath":"/t","type":"tmpfs"}]},)" +
           dev + "}");
  EXPECT_EQ(v.version, "0.4.0");
  EXPECT_EQ(v.location, "containerEdits.mounts[0].type");
  EXPECT_EQ(need(R"({"kind":"ab/cd","devices":[{"name":"0","containerEdits":{"env":["A=1"]}}]})").version, "0.5.0");
  EXPECT_EQ(need(R"({"kind":"ab/cd","devices":[{"name":"_x","containerEdits":{"env":["A=1"]}}]})").version, "0.5.0");
  EXPECT_EQ(need(R"({"kind":"ab/c.d",)" + dev + "}").location, "kind");
  EXPECT_EQ(need(R"({"kind":"ab/c.d",)" + dev + "}").version, "0.6.0");
  EXPECT_EQ(need(R"({"kind":"ab/cd","containerEdits":{"intelRdt":{}},)" + dev + "}").version, "0.7.0");
  EXPECT_EQ(need(R"({"kind":"ab/cd","containerEdits":{"additionalGids":[]},)" + dev + "}").version, "0.3.0");
  EXPECT_EQ(need(R"({"kind":"ab/cd","containerEdits":{"additionalGids":[5]},)" + dev + "}").version, "0.7.0");
  EXPECT_EQ(need(R"({"kind":"ab/cd","containerEdits":{"intelRdt":{"enableMonitoring":true}},)" + dev + "}").version,
            "1.1.0");
  EXPECT_EQ(known_version("v0.5.0"), "0.5.0");
  EXPECT_EQ(known_version("0.5"), std::nullopt);
  EXPECT_LT(compare_versions("0.4.0", "0.5.0"), 0);
  EXPECT_GT(compare_versions("1.0.0", "0.8.0"), 0);
}

TEST(CdiSpecFile, YamlScalarsAreTypedLikeSigsK8sYaml) {
  auto j =
      parse_spec_text("a: 1\nb: \"1\"\nc: yes\nd: ~\ne: 0.5.0\nf: -3\ng: 1.5\nh: 'x'\ni: 18446744073709551615\n", "t");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->dump(),
            R"({"a":1,"b":"1","c":true,"d":null,"e":"0.5.0","f":-3,"g":1.5,"h":"x","i":18446744073709551615})");
  EXPECT_EQ(parse_spec_text("a: [1, {b: 2}]\n", "t")->dump(), R"({"a":[1,{"b":2}]})");
  EXPECT_EQ(parse_spec_text("a: {b: 1, b: 2}\n", "t").error().message, "t: a: key \"b\" appears twice");
}

}  // namespace
}  // namespace gpufrac::cdi

namespace gpufrac::cdi {
namespace {

// `cdi validate` names file:line: the line of a location's key (or sequence item), else of its
// closest parent; the document is line 1.
TEST(CdiSpecLines, LinesOfLocations) {
  const std::string text =
      "cdiVersion: \"0.5.0\"\n"
      "kind: example.com/gpu\n"
      "devices:\n"
      "- name: \"0\"\n"
      "  containerEdits:\n"
      "    env: [A=1]\n"
      "    deviceNodes:\n"
      "    - {path: /dev/x, type: c}\n";
  const SpecLines lines = spec_lines(text);
  EXPECT_EQ(line_of(lines, "kind"), 2);
  EXPECT_EQ(line_of(lines, "devices[0].name"), 4);
  EXPECT_EQ(line_of(lines, "devices[0].containerEdits.env[0]"), 6);
  EXPECT_EQ(line_of(lines, "devices[0].containerEdits.deviceNodes[0].type"), 8);
  EXPECT_EQ(line_of(lines, "devices[0].containerEdits.hooks[0].path"), 5);  // absent: its parent
  EXPECT_EQ(line_of(lines, ""), 1);
  EXPECT_TRUE(spec_lines("[unclosed").empty());
}

}  // namespace
}  // namespace gpufrac::cdi
