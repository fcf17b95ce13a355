// Golden specs: `gpufrac cdi generate` output for every shipped simulated machine
// (nvml/machines/*.yaml) with the fixed config tests/fixtures/cdi/config.yaml, in YAML and JSON,
// compared byte for byte with tests/fixtures/cdi/<machine>.{yaml,json}. Each also passes the CDI
// JSON schema and `gpufrac cdi validate`. To regenerate after an intended change:
//   GPUFRAC_UPDATE_GOLDEN=1 <build>/bin/cdi_test --gtest_filter='CdiGolden.*'
// then review the diff (tests/fixtures/cdi/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cdi/cdi_names.hpp"
#include "cdi/render.hpp"
#include "cdi/spec.hpp"
#include "cdi/spec_file.hpp"
#include "cdi/validate.hpp"
#include "cdi_test_util.hpp"
#include "core/fs.hpp"
#include "json_schema_subset.hpp"

namespace gpufrac::cdi {
namespace {

using test::source_path;

std::vector<std::string> machines() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_path("nvml/machines")))
    if (e.path().extension() == ".yaml") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// What generate writes for the machine: the spec text, or "" when the machine offers no device.
std::string generated(const std::string& machine, Format format) {
  auto built = build_spec(test::machine_inventory(machine), test::golden_config(), kKind);
  EXPECT_TRUE(built) << built.error().message;
  if (!built || built->spec.devices.empty()) return "";
  return render(spec_json(built->spec), format, kSpecHeader);
}

std::string golden_path(const std::string& machine, Format format) {
  std::string stem = machine.substr(0, machine.size() - 5);
  return source_path("tests/fixtures/cdi/expected/" + stem + (format == Format::json ? ".json" : ".yaml"));
}

TEST(CdiGolden, EveryMachineMatchesItsExpectedSpec) {
  const bool update = std::getenv("GPUFRAC_UPDATE_GOLDEN") != nullptr;
  ASSERT_GE(machines().size(), 6u);
  for (const auto& m : machines())
    for (Format f : {Format::yaml, Format::json}) {
      const std::string text = generated(m, f);
      const std::string path = golden_path(m, f);
      if (update) {
        ASSERT_TRUE(fs::write_file_atomic(path, text, 0644));
        continue;
      }
      auto expected = fs::read_file(path);
      ASSERT_TRUE(expected) << path << " is missing: " << expected.error().message
                            << " (GPUFRAC_UPDATE_GOLDEN=1 writes it; see tests/fixtures/cdi/README.md)";
      EXPECT_EQ(text, *expected) << m << " differs from " << path;
    }
}

TEST(CdiGolden, SameInventorySameBytes) {
  for (const auto& m : machines()) EXPECT_EQ(generated(m, Format::yaml), generated(m, Format::yaml)) << m;
}

TEST(CdiGolden, YamlAndJsonAreTheSameSpec) {
  for (const auto& m : machines()) {
    auto y = parse_spec_text(generated(m, Format::yaml), m);
    auto j = parse_spec_text(generated(m, Format::json), m);
    ASSERT_TRUE(y && j) << m;
    EXPECT_EQ(*y, *j) << m;
  }
}

TEST(CdiGolden, EverySpecPassesTheCdiSchemaAndValidate) {
  const test::SchemaSet schema(source_path("tests/fixtures/cdi-schema"));
  int specs = 0;
  for (const auto& m : machines()) {
    const std::string text = generated(m, Format::json);
    if (text.empty()) continue;
    ++specs;
    EXPECT_EQ(schema.validate(nlohmann::json::parse(text)), std::vector<std::string>{}) << m;
    auto spec = parse_spec_text(generated(m, Format::yaml), m);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(validate_spec(*spec), std::vector<Problem>{}) << m;
  }
  EXPECT_EQ(specs, 7);  // every machine but the two *-mig-empty ones (MIG mode, no instance)
}

TEST(CdiSchema, CheckerAcceptsTheSamplesAndRejectsTheBadOne) {
  const test::SchemaSet schema(source_path("tests/fixtures/cdi-schema"));
  for (const char* good : {"good-minimal.json", "good-spec-example.json"}) {
    auto text = fs::read_file(source_path("tests/fixtures/cdi-schema/") + good);
    ASSERT_TRUE(text);
    EXPECT_EQ(schema.validate(nlohmann::json::parse(*text)), std::vector<std::string>{}) << good;
  }
  auto bad = fs::read_file(source_path("tests/fixtures/cdi-schema/bad-explicit-empty.json"));
  ASSERT_TRUE(bad);
  EXPECT_EQ(schema.validate(nlohmann::json::parse(*bad)),
            (std::vector<std::string>{"$: missing required cdiVersion", "$: missing required kind",
                                      "$: missing required devices"}));
  auto wrong = nlohmann::json::parse(R"({"cdiVersion":"0.5.0","kind":"a.b/c","devices":[{"name":"x",)"
                                     R"("containerEdits":{"deviceNodes":[{"path":1,"major":"1","uid":-1}]}}]})");
  EXPECT_EQ(schema.validate(wrong),
            (std::vector<std::string>{"$.devices[0].containerEdits.deviceNodes[0].major: not of type integer",
                                      "$.devices[0].containerEdits.deviceNodes[0].path: not of type string",
                                      "$.devices[0].containerEdits.deviceNodes[0].uid: below minimum"}));
}

}  // namespace
}  // namespace gpufrac::cdi
