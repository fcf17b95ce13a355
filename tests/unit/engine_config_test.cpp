#include <gtest/gtest.h>

#include "engine-config/configure.hpp"
#include "engine-config/containerd.hpp"
#include "engine-config/diff.hpp"
#include "engine-config/toml_lite.hpp"

namespace gpufrac::engine_config {
namespace {

using toml::KeyPath;
using toml::StatementKind;

constexpr const char* kDoc = R"(# comment
version = 2
imports = [
  "/a.toml",  # first
  '/b/*.toml',
]
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "pause:3.9"   # trailing
  text = """multi
[not.a.table]
line"""
  inline = { a = 1, b = [2, 3], "c.d" = 'x' }
[[proxy]]
date = 1979-05-27 07:32:00Z
)";

TEST(TomlLite, StatementsKeepTheTextExactly) {
  auto doc = toml::parse(kDoc, "t.toml");
  ASSERT_TRUE(doc) << doc.error().message;
  std::string joined;
  for (const auto& s : *doc) joined += s.raw;
  EXPECT_EQ(joined, kDoc);
  ASSERT_EQ(doc->size(), 9u);
  EXPECT_EQ((*doc)[2].kind, StatementKind::key_value);
  EXPECT_EQ((*doc)[2].key, KeyPath{"imports"});
  EXPECT_EQ((*doc)[2].line, 3);
  EXPECT_EQ(toml::string_array_value((*doc)[2].value), (std::vector<std::string>{"/a.toml", "/b/*.toml"}));
  EXPECT_EQ((*doc)[3].kind, StatementKind::table);
  EXPECT_EQ((*doc)[3].table, (KeyPath{"plugins", "io.containerd.grpc.v1.cri"}));
  EXPECT_EQ((*doc)[4].full(), (KeyPath{"plugins", "io.containerd.grpc.v1.cri", "sandbox_image"}));
  EXPECT_EQ((*doc)[4].value, "\"pause:3.9\"");
  EXPECT_EQ((*doc)[5].key, KeyPath{"text"});
  EXPECT_EQ((*doc)[5].line, 9);
  EXPECT_EQ((*doc)[6].value, "{ a = 1, b = [2, 3], \"c.d\" = 'x' }");
  EXPECT_EQ((*doc)[7].kind, StatementKind::array_table);
  EXPECT_EQ((*doc)[8].value, "1979-05-27 07:32:00Z");
  EXPECT_EQ((*doc)[8].table, KeyPath{"proxy"});
}

TEST(TomlLite, ValuesAndRendering) {
  EXPECT_EQ(toml::integer_value("2"), 2);
  EXPECT_EQ(toml::integer_value("1_000"), 1000);
  EXPECT_EQ(toml::integer_value("2.0"), std::nullopt);
  EXPECT_EQ(toml::string_value(R"("a\"b\\c\u00e9")"), "a\"b\\c\xc3\xa9");
  EXPECT_EQ(toml::string_value("'C:\\dir'"), "C:\\dir");
  EXPECT_EQ(toml::string_value("\"a\" x"), std::nullopt);
  EXPECT_EQ(toml::string_array_value("[]"), std::vector<std::string>{});
  EXPECT_EQ(toml::string_array_value("[1, 2]"), std::nullopt);
  EXPECT_EQ(toml::quote("a\"b\\\n"), R"("a\"b\\\u000a")");
  EXPECT_EQ(toml::key_path_text({"plugins", "io.containerd.grpc.v1.cri", "containerd"}),
            R"(plugins."io.containerd.grpc.v1.cri".containerd)");
}

// The error message, or "<parsed>" (never .error() of a success).
template <class T>
std::string error_of(const Result<T>& r) {
  return r ? std::string("<parsed>") : r.error().message;
}

TEST(TomlLite, SyntaxErrorsNameFileAndLine) {
  EXPECT_EQ(error_of(toml::parse("a = 1\nb = \"open\n", "f.toml")), "f.toml:2: unterminated string");
  EXPECT_EQ(error_of(toml::parse("a = 1 2\n", "f.toml")), "f.toml:1: unexpected text after the value");
  EXPECT_EQ(error_of(toml::parse("[a\n", "f.toml")), "f.toml:1: expected '.' or ']' after a key");
  EXPECT_EQ(error_of(toml::parse("x = [1,\n2\n", "f.toml")), "f.toml:3: unterminated array");
  EXPECT_EQ(error_of(toml::parse("= 3\n", "f.toml")), "f.toml:1: expected a key");
  EXPECT_EQ(error_of(toml::parse("k =\n", "f.toml")), "f.toml:1: expected a value");
}

TEST(ConfigureDiff, UnifiedHunks) {
  EXPECT_EQ(unified_diff("/f", std::string("a\n"), "a\n"), "");
  EXPECT_EQ(unified_diff("/f", std::nullopt, "x\ny\n"), "--- /dev/null\n+++ /f\n@@ -0,0 +1,2 @@\n+x\n+y\n");
  EXPECT_EQ(unified_diff("/f", std::string("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), "1\n2\n3\n4\nfive\n6\n7\n8\n9\n"),
            "--- /f\n+++ /f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
  EXPECT_EQ(unified_diff("/f", std::string("a\nb\n"), "b\n"), "--- /f\n+++ /f\n@@ -1,2 +1 @@\n-a\n b\n");
}

TEST(ConfigureContainerd, ImportsNameTheDropIn) {
  EXPECT_TRUE(imports_name({"/etc/containerd/conf.d/*.toml"}, "/etc/containerd/config.toml",
                           "/etc/containerd/conf.d/99-gpufrac.toml"));
  EXPECT_TRUE(imports_name({"conf.d/99-gpufrac.toml"}, "/etc/containerd/config.toml",
                           "/etc/containerd/conf.d/99-gpufrac.toml"));
  EXPECT_FALSE(imports_name({"/etc/containerd/*.toml"}, "/etc/containerd/config.toml",
                            "/etc/containerd/conf.d/99-gpufrac.toml"));
  EXPECT_FALSE(imports_name({}, "/etc/containerd/config.toml", "/etc/containerd/conf.d/99-gpufrac.toml"));
  EXPECT_EQ(resolve_import("x.toml", "/etc/containerd/config.toml"), "/etc/containerd/x.toml");
}

TEST(ConfigureContainerd, InlineRuntimesCannotBeExtended) {
  ContainerdInput in;
  in.main = {"/c.toml",
             "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  runtimes = { runc = {} }\n"};
  in.drop_in = {"/conf.d/99-gpufrac.toml", std::nullopt};
  in.runtime_path = "/usr/bin/gpufrac-runtime";
  auto plan = plan_containerd(in);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message,
            "/c.toml:3: plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes is set as a value, so the gpufrac "
            "runtime table cannot be added; write runtimes as "
            "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc] tables");
}

TEST(ConfigureContainerd, ExistingGpufracTableIsReplaced) {
  ContainerdInput in;
  in.main = {
      "/c.toml",
      "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpufrac]\n  runtime_type = \"old\"\n"};
  in.drop_in = {"/conf.d/99-gpufrac.toml", std::nullopt};
  in.runtime_path = "/usr/bin/gpufrac-runtime";
  auto plan = plan_containerd(in);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->files[0].after.find("\"old\""), std::string::npos);
  EXPECT_EQ(plan->files[1].after,
            "version = 2\nimports = [\"/conf.d/99-gpufrac.toml\"]\n"
            "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpufrac]\n  runtime_type = \"old\"\n");
}

TEST(ConfigureDocker, IdempotentAndKeepsOtherKeys) {
  auto first = plan_docker({"/d.json", R"({"b": 1, "a": {"x": true}})"}, "/usr/bin/gpufrac-runtime");
  ASSERT_TRUE(first);
  const std::string after = first->files[0].after;
  EXPECT_EQ(
      after,
      "{\n    \"b\": 1,\n    \"a\": {\n        \"x\": true\n    },\n    \"runtimes\": {\n        \"gpufrac\": {\n"
      "            \"path\": \"/usr/bin/gpufrac-runtime\",\n            \"runtimeArgs\": []\n        }\n    }\n}\n");
  auto second = plan_docker({"/d.json", after}, "/usr/bin/gpufrac-runtime");
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->files[0].changed());
  EXPECT_EQ(error_of(plan_docker({"/d.json", "[1]"}, "/x")),
            "/d.json: not a JSON object; fix it or move it away, then run the command again");
}

TEST(ConfigureDocker, NamesANonDefaultConfigInRuntimeArgs) {
  auto plan = plan_docker({"/d.json", std::nullopt}, "/usr/bin/gpufrac-runtime", "/srv/gpufrac.yaml");
  ASSERT_TRUE(plan);
  EXPECT_EQ(
      plan->files[0].after,
      "{\n    \"runtimes\": {\n        \"gpufrac\": {\n            \"path\": \"/usr/bin/gpufrac-runtime\",\n"
      "            \"runtimeArgs\": [\n                \"--gpufrac-config\",\n                \"/srv/gpufrac.yaml\"\n"
      "            ]\n        }\n    }\n}\n");
  // Configured without the config afterwards: the runtimeArgs go again.
  auto back = plan_docker({"/d.json", plan->files[0].after}, "/usr/bin/gpufrac-runtime");
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->files[0].changed());
  EXPECT_NE(back->files[0].after.find("\"runtimeArgs\": []"), std::string::npos);
}

}  // namespace
}  // namespace gpufrac::engine_config
