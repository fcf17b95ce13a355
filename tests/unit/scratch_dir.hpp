// Temporary directories for a unit test binary, removed when the process that made them exits
// (ctest runs each test in its own process, so nothing is left in /tmp however a test ends).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gpufrac::test {

inline std::string scratch_dir(const std::string& prefix = "gpufrac-test") {
  struct Made {
    pid_t owner = ::getpid();
    std::vector<std::string> dirs;
    ~Made() {
      if (::getpid() != owner) return;  // a forked child exiting must not remove its parent's
      for (const auto& d : dirs) std::filesystem::remove_all(d);
    }
  };
  static Made made;
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return "/nonexistent-scratch-dir";
  made.dirs.push_back(tmpl);
  return tmpl;
}

}  // namespace gpufrac::test
