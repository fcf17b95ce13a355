#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "bundle/oci.hpp"
#include "core/fs.hpp"
#include "core/spec/spec_scan.hpp"
#include "hook/cgroup_devices.hpp"
#include "scratch_dir.hpp"

namespace gpufrac::hook {
using namespace gpufrac::bundle;  // the bundle layer the hook is built on
namespace {

TEST(OciState, RuncShape) {
  auto s = parse_oci_state(
      R"({"ociVersion":"1.0.2-dev","id":"abc","status":"creating","pid":4242,"bundle":"/b","annotations":{}})");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->id, "abc");
  EXPECT_EQ(s->bundle, "/b");
  EXPECT_EQ(s->pid, 4242);
}

TEST(OciState, CrunShapeAndPidVariants) {
  auto s = parse_oci_state(R"({"ociVersion":"1.0","id":"c1","status":"created","pid":"77","bundle":"/b","root":"/r"})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pid, 77);
  auto no_pid = parse_oci_state(R"({"id":"c1","bundlePath":"/b","status":"stopped"})");
  ASSERT_TRUE(no_pid);
  EXPECT_FALSE(no_pid->pid);
  EXPECT_EQ(no_pid->bundle, "/b");
  EXPECT_FALSE(parse_oci_state(R"({"id":"c1","bundle":"/b","pid":-3})")->pid);
}

TEST(OciState, RefusesHostileIds) {
  for (const char* id : {"../../etc", "a/b", "..", "", ".hidden", "-x", "a b"}) {
    nlohmann::json j = {{"id", id}, {"bundle", "/b"}};
    auto s = parse_oci_state(j.dump());
    ASSERT_FALSE(s) << id;
    EXPECT_NE(s.error().message.find("container id"), std::string::npos);
  }
  EXPECT_FALSE(parse_oci_state(std::string(200, 'a')).has_value());
  EXPECT_FALSE(parse_oci_state("not json").has_value());
  EXPECT_FALSE(parse_oci_state(R"({"id":"x","bundle":"relative"})").has_value());
}

TEST(BundleSpec, ReadsAnnotationsRootAndPidNamespace) {
  auto s = parse_bundle_spec(R"({"root":{"path":"rootfs"},"annotations":{"gpufrac.io/fraction":"0.25","n":"1"},
      "linux":{"namespaces":[{"type":"mount"},{"type":"pid"}],"resources":{"devices":[{"allow":false,"access":"rwm"}]}}})",
                             "/bundle");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->rootfs, "/bundle/rootfs");
  EXPECT_EQ(s->annotations.at("gpufrac.io/fraction"), "0.25");
  EXPECT_TRUE(s->private_pid_namespace);
  EXPECT_EQ(s->device_rules.size(), 1u);
  auto host = parse_bundle_spec(
      R"({"root":{"path":"/abs"},"linux":{"namespaces":[{"type":"pid","path":"/proc/1/ns/pid"}]}})", "/b");
  ASSERT_TRUE(host);
  EXPECT_FALSE(host->private_pid_namespace);
  EXPECT_EQ(host->pid_namespace_path, "/proc/1/ns/pid");
  EXPECT_FALSE(parse_bundle_spec("{", "/b").has_value());
  EXPECT_FALSE(parse_bundle_spec("{}", "/b").has_value());
  // Fields of the wrong type are one-line errors or ignored, never an exception (found by fuzz_oci).
  auto object_path = parse_bundle_spec(R"({"root":{"path":{"x":"/b"}}})", "/b");
  ASSERT_FALSE(object_path.has_value());
  EXPECT_EQ(object_path.error().message, "/b/config.json: root.path is not a string; a path such as \"rootfs\"");
  auto odd_ns =
      parse_bundle_spec(R"({"root":{"path":"r"},"linux":{"namespaces":[{"type":{"a":1}},{"type":7}]}})", "/b");
  ASSERT_TRUE(odd_ns) << odd_ns.error().message;
  EXPECT_FALSE(odd_ns->private_pid_namespace);
}

// The fast path's one pass takes exactly the annotations and the environment the full read takes,
// and nothing from look-alike places.
TEST(BundleConfig, RequestFieldsAreWhatTheFullReadTakes) {
  const std::string dir = test::scratch_dir("gpufrac-bundle");
  const std::string config = R"({"root":{"path":"rootfs"},
      "annotations":{"gpufrac.io/fraction":"0.25","n":1,"o":{"p":"q"}},
      "process":{"env":["PATH=/bin","GPUFRAC_MEMORY=1Gi",3],"args":["sh"],"user":{"env":["X=1"]}},
      "linux":{"annotations":{"gpufrac.io/gpu":"1"}},"env":["Y=2"]})";
  ASSERT_TRUE(fs::write_file_atomic(dir + "/config.json", config, 0600));
  auto c = load_bundle_config(dir);
  ASSERT_TRUE(c) << c.error().message;
  auto full = c->full();
  ASSERT_TRUE(full) << full.error().message;
  EXPECT_EQ(c->request_fields.annotations, full->annotations);
  EXPECT_EQ(c->request_fields.env, full->env);
  EXPECT_EQ(c->request_fields.annotations, (std::map<std::string, std::string>{{"gpufrac.io/fraction", "0.25"}}));
  EXPECT_EQ(c->request_fields.env, (std::vector<std::string>{"PATH=/bin", "GPUFRAC_MEMORY=1Gi"}));
  ASSERT_TRUE(fs::write_file_atomic(dir + "/config.json", R"({"annotations":{"a":"1","a":"2"}})", 0600));
  EXPECT_FALSE(load_bundle_config(dir)) << "duplicate keys are still refused";
}

// The fast path's text test (core/spec/spec_scan.hpp, shared with gpufrac-runtime): everything gpufrac
// reads from config.json spells one of its words in the raw text, or the text has a \u escape;
// anything else cannot ask for a share.
TEST(BundleConfig, TheTextTestSeesEveryNameGpufracReads) {
  for (const char* named :
       {R"({"annotations":{"gpufrac.io/fraction":"0.5"}})", R"({"process":{"env":["GPUFRAC_MEMORY=1Gi"]}})",
        R"({"process":{"env":["GPUFRAC_TYPO=1"]}})", R"({"process":{"env":["GPUFRAC_CONFIGX=1","GPUFRAC_CONFIG=/c"]}})",
        R"({"annotations":{"gpu-fraction":"0.5"}})", R"({"annotations":{"gpu-memory":"1024"}})",
        R"({"annotations":{"clearml-injector/fraction":"0.5"}})",
        R"({"annotations":{"clearml-injector\/fraction":"1"}})",
        R"({"annotations":{"cdi.k8s.io/x":"vendor.example/gpu=0"}})",
        R"({"annotations":{"\u0067pufrac.io/fraction":"0.5"}})"})
    EXPECT_TRUE(may_name_gpufrac(named)) << named;
  for (
      const char* plain :
      {R"({"annotations":{"io.kubernetes.pod":"x"},"process":{"env":["PATH=/bin"]}})",
       R"({"annotations":{"gpufra":"x","gpu":"1","g":"pufrac","nvidia.com/gpu-x":"1"}})",
       R"({"hooks":{"createRuntime":[{"path":"/usr/bin/gpufrac-hook"}]},"env":["GpuFrac_X=1","GPUFRAC_CONFIG=/etc/g.yaml"]})",
       "", "g", "gpufrac"})
    EXPECT_FALSE(may_name_gpufrac(plain)) << plain;
}

// Scan::when_named skips the strict pass only where no request can be: an escaped key is read.
TEST(BundleConfig, WhenNamedSkipsOnlyTextsWithoutAName) {
  const std::string dir = test::scratch_dir("gpufrac-bundle-scan");
  ASSERT_TRUE(fs::write_file_atomic(dir + "/config.json", R"({"annotations":{"a":"1","a":"2"}})", 0600));
  auto skipped = load_bundle_config(dir, Scan::when_named);
  ASSERT_TRUE(skipped) << skipped.error().message;
  EXPECT_FALSE(skipped->checked);
  EXPECT_TRUE(skipped->request_fields.annotations.empty());
  EXPECT_FALSE(skipped->full()) << "an unchecked text never reaches the DOM";
  const std::string escaped = R"({"root":{"path":"r"},"annotations":{"gpufr\u0061c.io/fraction":"0.5"}})";
  ASSERT_TRUE(fs::write_file_atomic(dir + "/config.json", escaped, 0600));
  auto read = load_bundle_config(dir, Scan::when_named);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_TRUE(read->checked);
  EXPECT_EQ(read->request_fields.annotations, (std::map<std::string, std::string>{{"gpufrac.io/fraction", "0.5"}}));
  ASSERT_TRUE(fs::write_file_atomic(dir + "/config.json", R"({"annotations":{"gpufrac.io/x":"1","a":1,"a":2}})", 0600));
  EXPECT_FALSE(load_bundle_config(dir, Scan::when_named)) << "a named text is still checked strictly";
}

TEST(DeviceRules, LastMatchWins) {
  auto rules =
      nlohmann::json::parse(R"([{"allow":false,"access":"rwm"},{"allow":true,"type":"c","major":195,"access":"rw"}])");
  EXPECT_TRUE(spec_allows_device(rules, 'c', 195, 0, "rw"));
  EXPECT_FALSE(spec_allows_device(rules, 'c', 195, 0, "rwm"));
  EXPECT_FALSE(spec_allows_device(rules, 'c', 508, 0, "rw"));
  auto deny_after = nlohmann::json::parse(
      R"([{"allow":true,"access":"rwm"},{"allow":false,"type":"c","major":195,"minor":1,"access":"rwm"}])");
  EXPECT_TRUE(spec_allows_device(deny_after, 'c', 195, 0, "rw"));
  EXPECT_FALSE(spec_allows_device(deny_after, 'c', 195, 1, "rw"));
  EXPECT_FALSE(spec_allows_device(nlohmann::json::array(), 'c', 195, 0, "rw"));
  EXPECT_FALSE(spec_allows_device(nlohmann::json::parse(R"([{"allow":true,"major":"x"}])"), 'c', 195, 0, "rw"));
}

TEST(DeviceRules, FindsV1DevicesControllerAndWritesRules) {
  const std::string base = test::scratch_dir("gpufrac-cg");
  ASSERT_TRUE(fs::make_dirs(base + "/proc/42"));
  ASSERT_TRUE(fs::write_file_atomic(base + "/proc/42/cgroup", "9:name=systemd:/c1\n5:devices:/machine/c1\n0::/c1\n"));
  auto path = devices_cgroup_v1(base + "/proc", 42);
  ASSERT_TRUE(path);
  EXPECT_EQ(**path, "/machine/c1");
  ASSERT_TRUE(fs::make_dirs(base + "/cg/devices/machine/c1"));
  ASSERT_TRUE(fs::write_file_atomic(base + "/cg/devices/machine/c1/devices.allow", ""));
  std::vector<EditDeviceNode> nodes = {{"/dev/nvidia0", "", 'c', 195, 0}, {"/dev/nvidiactl", "", 'c', 195, 255}};
  auto rules = nlohmann::json::parse(R"([{"allow":true,"type":"c","major":195,"minor":255,"access":"rw"}])");
  ASSERT_TRUE(allow_devices(base + "/proc", base + "/cg", 42, rules, nodes));
  EXPECT_EQ(*fs::read_file(base + "/cg/devices/machine/c1/devices.allow"), "c 195:0 rw");
}

TEST(DeviceRules, CgroupV2OnlyIsRefusedNamingTheAlternatives) {
  const std::string base = test::scratch_dir("gpufrac-cg");
  ASSERT_TRUE(fs::make_dirs(base + "/proc/7"));
  ASSERT_TRUE(fs::write_file_atomic(base + "/proc/7/cgroup", "0::/user.slice/c\n"));
  auto r = allow_devices(base + "/proc", base + "/cg", 7, nlohmann::json::array(), {{"/dev/nvidia0", "", 'c', 195, 0}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cgroup v2"), std::string::npos);
  EXPECT_NE(r.error().message.find("gpufrac.io/gpu="), std::string::npos);
  EXPECT_NE(r.error().message.find("gpufrac-runtime"), std::string::npos);
}

}  // namespace
}  // namespace gpufrac::hook
