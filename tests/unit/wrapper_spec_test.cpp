#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "runtime-wrapper/requests.hpp"
#include "runtime-wrapper/runtime_exec.hpp"
#include "runtime-wrapper/spec_edit.hpp"

namespace gpufrac::wrapper {
namespace {

Edits sample_edits() {
  Edits e;
  e.env = {"GPUFRAC_DEVICES=GPU-1", "GPUFRAC_MEMORY_LIMITS=100"};
  e.device_nodes = {{"/dev/nvidiactl", "/r/dev/nvidiactl", 'c', 195, 255, 0666u, "rw"},
                    {"/dev/nvidia0", "/r/dev/nvidia0", 'c', 195, 0, 0666u, "rw"}};
  e.mounts = {{"tmpfs", "/run/gpufrac", "tmpfs", {"nosuid", "size=1m"}},
              {"/s/limits", "/run/gpufrac/limits", "bind", {"ro", "bind"}},
              {"/s/usage", "/run/gpufrac/usage", "", {"nosuid"}}};
  e.hooks = {{"createRuntime",
              "/usr/bin/gpufrac-hook",
              {"gpufrac-hook", "createRuntime", "--attach"},
              {"PATH=/bin"},
              std::nullopt},
             {"poststop", "/usr/bin/gpufrac-hook", {"gpufrac-hook", "poststop"}, {"PATH=/bin"}, 30}};
  return e;
}

TEST(WrapperSpecEdit, RendersEveryEditAndKeepsKeyOrder) {
  Spec spec = Spec::parse(R"({"ociVersion":"1.0.2","process":{"env":["PATH=/bin","GPUFRAC_DEVICES=old"]},
    "root":{"path":"rootfs"},"mounts":[{"destination":"/proc","type":"proc","source":"proc"}],
    "linux":{"resources":{"devices":[{"allow":false,"access":"rwm"}]},
             "devices":[{"path":"/dev/nvidia0","type":"c","major":1,"minor":1}]}})");
  ASSERT_TRUE(apply_edits(spec, sample_edits()));
  EXPECT_EQ(spec.begin().key(), "ociVersion");
  EXPECT_EQ(spec["process"]["env"].dump(), R"(["PATH=/bin","GPUFRAC_DEVICES=GPU-1","GPUFRAC_MEMORY_LIMITS=100"])");
  EXPECT_EQ(spec["linux"]["devices"].dump(),
            R"([{"path":"/dev/nvidiactl","type":"c","major":195,"minor":255,"fileMode":438,"uid":0,"gid":0},)"
            R"({"path":"/dev/nvidia0","type":"c","major":195,"minor":0,"fileMode":438,"uid":0,"gid":0}])");
  EXPECT_EQ(spec["linux"]["resources"]["devices"].dump(),
            R"([{"allow":false,"access":"rwm"},{"allow":true,"type":"c","major":195,"minor":255,"access":"rw"},)"
            R"({"allow":true,"type":"c","major":195,"minor":0,"access":"rw"}])");
  EXPECT_EQ(spec["mounts"].dump(),
            R"([{"destination":"/proc","type":"proc","source":"proc"},)"
            R"({"destination":"/run/gpufrac","type":"tmpfs","source":"tmpfs","options":["nosuid","size=1m"]},)"
            R"({"destination":"/run/gpufrac/limits","type":"bind","source":"/s/limits","options":["ro","bind"]},)"
            R"({"destination":"/run/gpufrac/usage","type":"bind","source":"/s/usage","options":["nosuid","rbind"]}])");
  EXPECT_EQ(
      spec["hooks"].dump(),
      R"({"createRuntime":[{"path":"/usr/bin/gpufrac-hook","args":["gpufrac-hook","createRuntime","--attach"],"env":["PATH=/bin"]}],)"
      R"("poststop":[{"path":"/usr/bin/gpufrac-hook","args":["gpufrac-hook","poststop"],"env":["PATH=/bin"],"timeout":30}]})");
  EXPECT_EQ(spec["annotations"].dump(), R"({"gpufrac.io/injected":"true"})");
  EXPECT_TRUE(already_injected(spec, "/elsewhere/gpufrac-hook"));
}

TEST(WrapperSpecEdit, WrongTypesAreOneLineErrors) {
  Spec spec = Spec::parse(R"({"linux":{"devices":{}}})");
  auto r = apply_edits(spec, sample_edits());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "config.json: linux.devices must be a list");
  Spec env = Spec::parse(R"({"process":{"env":"PATH=/bin"}})");
  auto env_error = apply_edits(env, sample_edits());
  ASSERT_FALSE(env_error);
  EXPECT_EQ(env_error.error().message, "config.json: process.env must be a list");
  Spec hooks = Spec::parse(R"({"hooks":{"poststop":{}}})");
  auto hooks_error = apply_edits(hooks, sample_edits());
  ASSERT_FALSE(hooks_error);
  EXPECT_EQ(hooks_error.error().message, "config.json: hooks.poststop must be a list");
}

TEST(WrapperSpecEdit, AlreadyInjected) {
  EXPECT_FALSE(
      already_injected(Spec::parse(R"({"annotations":{"gpufrac.io/fraction":"0.5"}})"), "/usr/bin/gpufrac-hook"));
  EXPECT_TRUE(already_injected(Spec::parse(R"({"annotations":{"gpufrac.io/injected":"true"}})"), "/x"));
  EXPECT_TRUE(already_injected(Spec::parse(R"({"hooks":{"prestart":[{"path":"/opt/bin/gpufrac-hook"}]}})"), "/x"));
  EXPECT_TRUE(already_injected(Spec::parse(R"({"hooks":{"createRuntime":[{"path":"/x"}]}})"), "/x"));
  EXPECT_FALSE(already_injected(Spec::parse(R"({"hooks":{"createRuntime":[{"path":"/usr/bin/other"}],"x":3}})"), "/x"));
}

TEST(WrapperRequests, CdiAnnotationsNameOurDevicesOnce) {
  Annotations a = {{"cdi.k8s.io/a", "nvidia.com/gpu=0,gpufrac.io/gpu=0-0.25"},
                   {"cdi.k8s.io/b", "gpufrac.io/gpu=0-0.25,gpufrac.io/gpu=1"},
                   {"cdi.k8s.ioX", "gpufrac.io/gpu=7"},
                   {"other", "gpufrac.io/gpu=9"}};
  EXPECT_EQ(gpufrac_cdi_devices(a), (std::vector<std::string>{"gpufrac.io/gpu=0-0.25", "gpufrac.io/gpu=1"}));
  EXPECT_TRUE(wants_gpufrac(a, false));
  EXPECT_FALSE(wants_gpufrac({{"cdi.k8s.io/a", "nvidia.com/gpu=0"}}, true));
  EXPECT_TRUE(wants_gpufrac({{"gpu-fraction", "0.5"}}, true));
  EXPECT_FALSE(wants_gpufrac({{"gpu-fraction", "0.5"}}, false));
  EXPECT_FALSE(wants_gpufrac({{"gpufrac.io/injected", "true"}}, true));
}

TEST(WrapperRequests, PodSandboxesAreNeverPrepared) {
  Annotations pod = {{"gpufrac.io/fraction", "0.25"}, {"io.kubernetes.cri.container-type", "sandbox"}};
  EXPECT_TRUE(is_pod_sandbox(pod));
  EXPECT_FALSE(wants_gpufrac(pod, true));
  pod["io.kubernetes.cri.container-type"] = "container";
  EXPECT_TRUE(wants_gpufrac(pod, true));
  EXPECT_FALSE(wants_gpufrac({{"gpu-fraction", "0.5"}, {"io.kubernetes.cri-o.ContainerType", "sandbox"}}, true));
  EXPECT_TRUE(wants_gpufrac({{"gpu-fraction", "0.5"}, {"io.kubernetes.cri-o.ContainerType", "container"}}, true));
}

TEST(WrapperRequests, AnnotationRequestErrorsNameTheAnnotation) {
  auto bad = annotation_request({{"gpufrac.io/fraction", "1.5"}}, true);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::user);
  EXPECT_NE(bad.error().message.find("gpufrac.io/fraction: \"1.5\""), std::string::npos) << bad.error().message;
  auto good = annotation_request({{"gpufrac.io/fraction", "0.25"}}, true);
  ASSERT_TRUE(good);
  ASSERT_EQ(good->size(), 1u);
  EXPECT_EQ((*good)[0].device_key, "");
  EXPECT_EQ((*good)[0].request.describe(), "fraction=0.25");
}

class RuntimeResolve : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-resolve.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ::mkdir((dir_ + "/a").c_str(), 0755);
    ::mkdir((dir_ + "/b").c_str(), 0755);
    make_exec(dir_ + "/b/crun");
    make_exec(dir_ + "/a/runc");
    std::ofstream(dir_ + "/a/notexec") << "x";
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  static void make_exec(const std::string& p) {
    std::ofstream(p) << "#!/bin/sh\n";
    ::chmod(p.c_str(), 0755);
  }
  std::optional<FileId> id_of(const std::string& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return FileId{st.st_dev, st.st_ino};
  }
  std::string dir_;
};

TEST_F(RuntimeResolve, FirstFoundOnPathByAbsoluteDirectory) {
  const std::string path = "relative:" + dir_ + "/b:" + dir_ + "/a";
  EXPECT_EQ(resolve_runtime({"runc", "crun"}, path, std::nullopt).value(), dir_ + "/a/runc");
  EXPECT_EQ(resolve_runtime({"crun", "runc"}, path, std::nullopt).value(), dir_ + "/b/crun");
  EXPECT_EQ(resolve_runtime({"notexec", dir_ + "/b/crun"}, dir_ + "/a", std::nullopt).value(), dir_ + "/b/crun");
}

TEST_F(RuntimeResolve, SkipsItselfAndRelativePaths) {
  const std::string path = dir_ + "/a:" + dir_ + "/b";
  EXPECT_EQ(resolve_runtime({"runc", "crun"}, path, id_of(dir_ + "/a/runc")).value(), dir_ + "/b/crun");
  auto r = resolve_runtime({"a/runc", "./b/crun"}, path, std::nullopt);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "runtimes: none of a/runc, ./b/crun is an executable file (names are looked up in the absolute directories "
            "of PATH \"" +
                path + "\"); name runc, crun or an absolute path in the config's runtimes:");
}

}  // namespace
}  // namespace gpufrac::wrapper
