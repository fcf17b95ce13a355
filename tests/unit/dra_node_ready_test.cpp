// gpufrac-dra's wait for node setup's ready file (k8s/node_ready.hpp): its first line must be the
// plugin's version; absent, empty, another version, or not a file, it keeps waiting, and the line
// it logs says which.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>

#include "core/fs.hpp"
#include "k8s/node_ready.hpp"
#include "scratch_dir.hpp"

namespace gpufrac::dra {
namespace {

using State = NodeReady::State;

class NodeReadyFile : public ::testing::Test {
 protected:
  std::string dir = test::scratch_dir("gpufrac-node-ready");
  std::string path = dir + "/node-ready";
  void write(const std::string& text) { ASSERT_TRUE(fs::write_file_atomic(path, text)); }
};

TEST_F(NodeReadyFile, ItsOwnVersionOnTheFirstLineIsReady) {
  write("0.9.0\nrestart: none\n");
  EXPECT_EQ(read_node_ready(path, "0.9.0"), (NodeReady{State::ready, ""}));
  write("0.9.0");
  EXPECT_EQ(read_node_ready(path, "0.9.0").state, State::ready);
}

TEST_F(NodeReadyFile, AbsentIsNodeSetupNotFinished) {
  const NodeReady r = read_node_ready(path, "0.9.0");
  EXPECT_EQ(r, (NodeReady{State::waiting, "node setup not finished"}));
  EXPECT_EQ(node_ready_line(path, r, "0.9.0"), "waiting for " + path + " (node setup not finished)");
}

TEST_F(NodeReadyFile, EmptyKeepsWaiting) {
  write("");
  EXPECT_EQ(node_ready_line(path, read_node_ready(path, "0.9.0"), "0.9.0"),
            "waiting for " + path + " (node setup not finished: the file is empty)");
}

TEST_F(NodeReadyFile, AnotherVersionIsRefusedInOneLine) {
  write("0.8.1\n");
  const NodeReady r = read_node_ready(path, "0.9.0");
  EXPECT_EQ(r, (NodeReady{State::skewed, "0.8.1"}));
  EXPECT_EQ(node_ready_line(path, r, "0.9.0"),
            path +
                " names version \"0.8.1\", this plugin is 0.9.0: waiting for node setup of 0.9.0 (the node "
                "DaemonSet's image must be this one's)");
  write("0.9.0-rc1\n");
  EXPECT_EQ(read_node_ready(path, "0.9.0").state, State::skewed) << "a prefix is not the version";
}

TEST_F(NodeReadyFile, ADirectoryOrAHugeFileKeepsWaitingSayingWhy) {
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  const NodeReady dir_state = read_node_ready(path, "0.9.0");
  EXPECT_EQ(dir_state.state, State::waiting);
  EXPECT_EQ(dir_state.detail, path + " is a directory, not a regular file; refusing to read it");
  ASSERT_EQ(::rmdir(path.c_str()), 0);
  write("0.9.0\n" + std::string(2 * kMaxReadyBytes, 'x'));
  EXPECT_EQ(read_node_ready(path, "0.9.0").state, State::waiting) << "read bounded, never whole";
}

}  // namespace
}  // namespace gpufrac::dra
