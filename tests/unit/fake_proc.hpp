// A fixture proc root for liveness tests: <root>/<pid>/stat files with chosen state and start time.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::testing {

// A /proc/<pid>/stat line whose comm holds spaces and parentheses, as a hostile process may name itself.
inline std::string stat_line(std::int64_t pid, char state, std::uint64_t start) {
  std::string line = text::cat(pid, " (evil) (x) ", state);
  for (int field = 4; field <= 21; ++field) line += " 0";
  return line + text::cat(" ", start, " 1000 200 18446744073709551615\n");
}

inline void write_stat(const std::string& proc_root, std::int64_t pid, char state, std::uint64_t start) {
  const std::string dir = text::cat(proc_root, "/", pid);
  ASSERT_TRUE(fs::make_dirs(dir));
  ASSERT_TRUE(fs::write_file_atomic(dir + "/stat", stat_line(pid, state, start)));
}

inline std::string temp_dir(const char* tag) {
  std::string tmpl = std::string("/tmp/gpufrac-") + tag + "-XXXXXX";
  return ::mkdtemp(tmpl.data());
}

}  // namespace gpufrac::testing
