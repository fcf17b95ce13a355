// How gpufrac-runtime reads config.json and decides "pass it through" (core/spec/spec_read.hpp,
// core/spec/spec_scan.hpp): the text test over the whole file, however it is split into pieces and
// however large the file is; a spec that names gpufrac and cannot be read whole is refused.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/fs.hpp"
#include "core/spec/spec_read.hpp"
#include "core/spec/spec_scan.hpp"
#include "scratch_dir.hpp"

namespace gpufrac {
namespace {

const std::vector<std::string>& texts() {
  static const std::vector<std::string> all = {
      "",
      R"({"annotations":{"gpufrac.io/fraction":"0.25"}})",
      R"({"annotations":{"clearml-injector\/fraction":"0.5"}})",
      R"({"process":{"env":["GPUFRAC_CONFIG=/etc/x.yaml"]}})",
      R"({"process":{"env":["GPUFRAC_CONFIG=/a","GPUFRAC_FRACTION=0.5"]}})",
      R"({"process":{"env":["GPUFRAC_CONFIG"]}})",
      R"({"process":{"env":["A=GPUFRAC_"]}})",
      R"({"process":{"env":["GPUFRAC_CONFIG=/a"]},"x":"GPUFRAC_CONFIG"})",
      R"({"annotations":{"gpufrac\u002eio/fraction":"0.25"}})",
      R"({"hooks":{"prestart":[{"path":"/usr/bin/gpufrac-hook"}]}})",
      R"({"annotations":{"io.kubernetes.cri.container-type":"container"}})",
      "xxxxxxxxxxxxxxxxxxxxcdi.k8s.ioxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  };
  return all;
}

// Fed in two pieces split at every byte, and byte by byte: always the one-piece answer.
TEST(SpecScanner, AnySplitGivesTheWholeTextsAnswer) {
  for (const std::string& t : texts()) {
    const bool whole = may_name_gpufrac(t);
    for (std::size_t cut = 0; cut <= t.size(); ++cut) {
      SpecScanner s;
      s.feed(std::string_view(t).substr(0, cut));
      s.feed(std::string_view(t).substr(cut));
      EXPECT_EQ(s.named(), whole) << t << " cut at " << cut;
    }
    SpecScanner bytes;
    for (char c : t) bytes.feed(std::string_view(&c, 1));
    EXPECT_EQ(bytes.named(), whole) << t << " byte by byte";
  }
}

TEST(SpecScanner, ANameIsFoundInAnyPieceAndStaysFound) {
  SpecScanner s;
  EXPECT_FALSE(s.feed(std::string(100000, 'x')));
  EXPECT_FALSE(s.feed("...gpufrac."));
  EXPECT_TRUE(s.feed("io/fraction"));
  EXPECT_TRUE(s.feed(std::string(10, 'y')));
  EXPECT_TRUE(s.named());
  SpecScanner config;
  EXPECT_FALSE(config.feed("\"GPUFRAC_"));
  EXPECT_TRUE(config.named()) << "GPUFRAC_ at the very end is a name";
  EXPECT_FALSE(config.feed("CONFIG=/x\""));
  EXPECT_FALSE(config.named()) << "GPUFRAC_CONFIG= alone is not";
}

class SpecReadTest : public ::testing::Test {
 protected:
  std::string dir = test::scratch_dir("gpufrac-spec-read");
  const SpecBounds small{.max_bytes = 64, .max_scan_bytes = 4096};
  std::string write(const std::string& name, const std::string& text) {
    EXPECT_TRUE(fs::write_file_atomic(dir + "/" + name, text));
    return dir + "/" + name;
  }
  std::string refusal(const std::string& path) {
    return path +
           ": names gpufrac but is larger than 64 bytes; a spec that asks gpufrac for a GPU must be a "
           "regular file of at most 64 bytes";
  }
};

TEST_F(SpecReadTest, WithinTheBoundTheTextAndItsAnswer) {
  auto plain = read_spec(write("plain", R"({"annotations":{}})"), small);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->named);
  EXPECT_EQ(plain->text, R"({"annotations":{}})");
  auto named = read_spec(write("named", R"({"annotations":{"gpufrac.io/fraction":"0.25"}})"), small);
  ASSERT_TRUE(named);
  EXPECT_TRUE(named->named);
  EXPECT_EQ(named->text, R"({"annotations":{"gpufrac.io/fraction":"0.25"}})");
}

TEST_F(SpecReadTest, NoFileOrADirectoryIsTheRuntimesToReport) {
  for (const std::string& path : {dir + "/missing", dir + "/missing/config.json", dir}) {
    auto r = read_spec(path, small);
    ASSERT_TRUE(r) << path << ": " << r.error().message;
    EXPECT_FALSE(r->named);
    EXPECT_FALSE(r->text.has_value());
  }
}

// Larger than the bound: the whole file decides, its tail included.
TEST_F(SpecReadTest, ALargeSpecNamingGpufracAnywhereIsRefused) {
  const std::string pad(5000 - 100, 'x');
  for (const std::string& text : {std::string(R"({"gpufrac.io/fraction":"0.25","pad":")") + pad + "\"}",
                                  std::string(R"({"pad":")") + pad + R"(","gpufrac.io/fraction":"0.25"})",
                                  std::string(R"({"pad":")") + pad.substr(0, 3000) + "\",\"e\":[\"GPUFRAC_GPU=0\"]}",
                                  std::string(60, ' ') + "\"gpufrac.io\"" + std::string(100, ' ')}) {
    const std::string path = write("large", text);
    auto r = read_spec(path, {.max_bytes = 64, .max_scan_bytes = 8192});
    ASSERT_FALSE(r) << text.substr(0, 80);
    EXPECT_EQ(r.error().message, refusal(path));
    EXPECT_EQ(r.error().kind, ErrorKind::user);
  }
}

TEST_F(SpecReadTest, ALargeSpecThatCannotNameGpufracIsPassedOn) {
  for (const std::string& text :
       {std::string(4000, ' '), std::string(60, ' ') + "\"GPUFRAC_CONFIG=/x\"" + std::string(4000, ' ')}) {
    auto r = read_spec(write("large", text), small);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->named);
    EXPECT_FALSE(r->text.has_value());
  }
}

TEST_F(SpecReadTest, TooLargeToScanIsRefused) {
  const std::string path = write("huge", std::string(4097, ' '));
  auto r = read_spec(path, small);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, path +
                                   ": larger than 4096 bytes, too large to tell whether it asks gpufrac for a GPU; "
                                   "gpufrac-runtime passes on specs of at most that size");
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  EXPECT_TRUE(read_spec(write("huge", std::string(4096, ' ')), small)) << "exactly the scan bound is scanned";
}

TEST_F(SpecReadTest, ATextThatCannotBeExaminedIsRefused) {
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, kind] :
       {std::pair<std::string, std::string>{fifo, "a FIFO"}, {"/dev/null", "a character device"}}) {
    auto r = read_spec(path, small);
    ASSERT_FALSE(r) << path;
    EXPECT_EQ(r.error().message, path + " is " + kind +
                                     ", not a regular file: gpufrac cannot tell whether it asks for a GPU; a spec "
                                     "must be a regular file");
    EXPECT_EQ(r.error().kind, ErrorKind::user);
  }
}

}  // namespace
}  // namespace gpufrac
