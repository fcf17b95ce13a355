#include <gtest/gtest.h>

#include "core/spec/spec_scan.hpp"
#include "runtime-wrapper/argv.hpp"
#include "runtime-wrapper/error_log.hpp"

namespace gpufrac::wrapper {
namespace {

RuntimeArgs parse(std::vector<std::string_view> args) {
  return parse_runtime_args(args);
}

TEST(WrapperArgv, ContainerdShimCreate) {
  // What containerd-shim-runc-v2 runs (go-runc): global flags, then create with its flags, then the id.
  auto a = parse({"--root", "/run/containerd/runc/k8s.io", "--log", "/run/b/log.json", "--log-format", "json",
                  "--systemd-cgroup", "create", "--bundle", "/run/b", "--pid-file", "/run/b/init.pid", "abc"});
  EXPECT_EQ(a.command, "create");
  EXPECT_TRUE(a.creates);
  EXPECT_EQ(a.bundle, "/run/b");
  EXPECT_EQ(a.container_id, "abc");
  EXPECT_EQ(a.log_path, "/run/b/log.json");
  EXPECT_EQ(a.log_format, "json");
  EXPECT_EQ(a.config_file, "");
}

TEST(WrapperArgv, FlagSpellings) {
  auto a = parse({"-root=/r", "--log=/l", "run", "-b=/b1", "-d", "id1"});
  EXPECT_EQ(a.command, "run");
  EXPECT_TRUE(a.creates);
  EXPECT_EQ(a.bundle, "/b1");
  EXPECT_EQ(a.log_path, "/l");
  EXPECT_EQ(a.container_id, "id1");
  auto b = parse({"create", "-b", "rel/bundle", "x"});
  EXPECT_EQ(b.bundle, "rel/bundle");
  EXPECT_EQ(b.container_id, "x");
}

TEST(WrapperArgv, FlagsAfterTheIdAndDefaultBundle) {
  auto a = parse({"create", "myid", "--bundle", "/b", "--console-socket", "/s.sock"});
  EXPECT_EQ(a.container_id, "myid");
  EXPECT_EQ(a.bundle, "/b");
  auto b = parse({"create", "--no-pivot", "other"});
  EXPECT_EQ(b.bundle, "");
  EXPECT_EQ(b.container_id, "other");
}

TEST(WrapperArgv, BundleValueNamedCreateIsNotTheCommand) {
  auto a = parse({"--root", "create", "state", "x"});
  EXPECT_EQ(a.command, "state");
  EXPECT_FALSE(a.creates);
  auto b = parse({"create", "--bundle", "create", "id"});
  EXPECT_EQ(b.bundle, "create");
  EXPECT_EQ(b.container_id, "id");
}

TEST(WrapperArgv, CrunConfigOverride) {
  auto a = parse({"--cgroup-manager", "systemd", "create", "-f", "other.json", "--bundle=/b", "c1"});
  EXPECT_EQ(a.command, "create");
  EXPECT_EQ(a.config_file, "other.json");
  EXPECT_EQ(a.container_id, "c1");
}

TEST(WrapperArgv, OtherCommandsAndNoCommand) {
  EXPECT_FALSE(parse({"delete", "--force", "x"}).creates);
  EXPECT_EQ(parse({"delete", "--force", "x"}).container_id, "");
  EXPECT_EQ(parse({"--version"}).command, "");
  EXPECT_EQ(parse({}).command, "");
  EXPECT_EQ(parse({"--debug", "--", "create", "x"}).command, "create");
  EXPECT_EQ(parse({"create", "--", "-weird-id"}).container_id, "-weird-id");
  EXPECT_EQ(parse({"--log"}).command, "");  // a valued flag at the end
}

TEST(WrapperSpecScan, OnlyCandidateSpecsAreParsed) {
  EXPECT_FALSE(may_name_gpufrac(R"({"annotations":{"io.kubernetes.cri.container-type":"container"}})"));
  EXPECT_FALSE(may_name_gpufrac(""));
  EXPECT_TRUE(may_name_gpufrac(R"({"annotations":{"gpufrac.io/fraction":"0.25"}})"));
  EXPECT_TRUE(may_name_gpufrac(R"({"annotations":{"gpufrac.io\/fraction":"0.25"}})"));
  EXPECT_TRUE(may_name_gpufrac(R"({"annotations":{"gpu-memory":"4096"}})"));
  EXPECT_TRUE(may_name_gpufrac(R"({"annotations":{"clearml-injector\/fraction":"0.5"}})"));
  EXPECT_TRUE(may_name_gpufrac(R"({"annotations":{"cdi.k8s.io/x":"gpufrac.io/gpu=0"}})"));
  EXPECT_TRUE(may_name_gpufrac(R"({"annotations":{"gpufrac\u002eio/fraction":"0.25"}})"));
}

TEST(WrapperErrorLog, RuncLineFormats) {
  EXPECT_EQ(render_log_line("json", "gpufrac: no GPU has room", "2026-01-02T03:04:05Z"),
            "{\"level\":\"error\",\"msg\":\"gpufrac: no GPU has room\",\"time\":\"2026-01-02T03:04:05Z\"}\n");
  EXPECT_EQ(render_log_line("text", "gpufrac: a \"quoted\" \\ value", "T"),
            "time=\"T\" level=error msg=\"gpufrac: a \\\"quoted\\\" \\\\ value\"\n");
  EXPECT_EQ(render_log_line("", "m", "T"), "time=\"T\" level=error msg=\"m\"\n");
}

// --gpufrac-config FILE as Docker's runtimeArgs put it: first, taken out of what runc gets.
std::vector<std::string> take(std::vector<std::string> args, Result<std::string>* taken) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  *taken = take_config_flag(argc, argv.data());
  EXPECT_EQ(argv[static_cast<std::size_t>(argc)], nullptr);
  return {argv.begin(), argv.begin() + argc};
}

TEST(WrapperArgv, ConfigFlagTakenOnlyFirst) {
  Result<std::string> path;
  EXPECT_EQ(take({"gpufrac-runtime", "--gpufrac-config", "/etc/g.yaml", "--root", "/r", "create", "x"}, &path),
            (std::vector<std::string>{"gpufrac-runtime", "--root", "/r", "create", "x"}));
  EXPECT_EQ(*path, "/etc/g.yaml");
  EXPECT_EQ(take({"gpufrac-runtime", "--gpufrac-config=/g.yaml", "state", "x"}, &path),
            (std::vector<std::string>{"gpufrac-runtime", "state", "x"}));
  EXPECT_EQ(*path, "/g.yaml");
  // Anywhere else it is the runtime's argument, untouched.
  EXPECT_EQ(take({"gpufrac-runtime", "state", "--gpufrac-config", "/g.yaml"}, &path).size(), 4u);
  EXPECT_EQ(*path, "");
  EXPECT_EQ(take({"gpufrac-runtime", "--gpufrac-configs", "/g.yaml"}, &path).size(), 3u);
  EXPECT_EQ(*path, "");
  take({"gpufrac-runtime", "--gpufrac-config", "g.yaml", "state"}, &path);
  ASSERT_FALSE(path);
  EXPECT_EQ(path.error().message,
            "--gpufrac-config: needs the absolute path of gpufrac's config, e.g. --gpufrac-config "
            "/etc/gpufrac/config.yaml");
  take({"gpufrac-runtime", "--gpufrac-config"}, &path);
  EXPECT_FALSE(path);
}

}  // namespace
}  // namespace gpufrac::wrapper
