// Prints the installed locations this build embeds in its programs (core/build_info.hpp), one
// `name=value` per line. tests/build/layout_test.sh builds it in trees configured several ways.
#include <cstdio>

#include "core/build_info.hpp"

int main() {
  std::printf("shim-dir=%s\nbin-dir=%s\nconfig=%s\n", gpufrac::build::kShimDir, gpufrac::build::kBinDir,
              gpufrac::build::kConfigPath);
  return 0;
}
