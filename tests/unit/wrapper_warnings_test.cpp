#include <gtest/gtest.h>

#include "runtime-wrapper/warnings.hpp"

namespace gpufrac::wrapper {
namespace {

constexpr const char* kId = "4e19fb7e68d9033d807767190c5ed324528d5b85d1ea7f7ba1aa39b16a0c5bdf";

std::string spec_with_hostname(const std::string& source) {
  return R"({"mounts":[{"destination":"/etc/hostname","type":"bind","source":")" + source +
         R"(","options":["rbind"]}]})";
}

TEST(WrapperWarnings, DockerContainerDirFromTheHostnameBind) {
  const std::string dir = std::string("/var/lib/docker/containers/") + kId;
  EXPECT_EQ(docker_container_dir(spec_with_hostname(dir + "/hostname"), kId), dir);
  // Only for this very container id, a plain absolute path, never a relative or escaped one.
  EXPECT_EQ(docker_container_dir(spec_with_hostname(dir + "/hostname"), "other"), "");
  EXPECT_EQ(docker_container_dir(spec_with_hostname(dir + "/hostname"), ""), "");
  EXPECT_EQ(docker_container_dir(spec_with_hostname(std::string("containers/") + kId + "/hostname"), kId), "");
  EXPECT_EQ(docker_container_dir(spec_with_hostname(std::string("/a/../b/containers/") + kId + "/hostname"), kId), "");
  EXPECT_EQ(docker_container_dir(spec_with_hostname(std::string("/a\\/containers/") + kId + "/hostname"), kId), "");
  EXPECT_EQ(docker_container_dir(R"({"process":{}})", kId), "");
}

TEST(WrapperWarnings, LabelsThatLookLikeRequests) {
  auto w = docker_label_warnings(
      R"({"Config":{"Labels":{"gpufrac.io/fraction":"0.25","GPUFRAC_MEMORY":"4 Gi","com.example":"gpufrac.io/x"}}})");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0],
            "label \"GPUFRAC_MEMORY\" is not a request: Docker does not pass labels to the runtime; use -e "
            "GPUFRAC_MEMORY=VALUE (Docker 20.10+) or --annotation (Docker 24+)");
  EXPECT_EQ(w[1],
            "label \"gpufrac.io/fraction\" is not a request: Docker does not pass labels to the runtime; use -e "
            "GPUFRAC_FRACTION=0.25 (Docker 20.10+) or --annotation (Docker 24+)");
  EXPECT_TRUE(docker_label_warnings(R"({"Config":{"Labels":{"a":"b"}}})").empty());
  EXPECT_TRUE(docker_label_warnings(R"({"Config":{"Labels":null}} gpufrac.io/)").empty());
  EXPECT_TRUE(docker_label_warnings("not json gpufrac.io/").empty());
}

}  // namespace
}  // namespace gpufrac::wrapper
