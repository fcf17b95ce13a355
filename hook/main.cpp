// gpufrac-hook: the OCI hook (prestart/createRuntime books and applies a GPU share, poststop
// releases it). Fully static: LD_PRELOAD and LD_LIBRARY_PATH in its environment load nothing.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "bundle/oci.hpp"
#include "core/build_info.hpp"
#include "core/fs.hpp"
#include "hook/flow.hpp"

int main(int argc, char** argv) {
  const std::string_view first = argc > 1 ? argv[1] : "";
  if (first == "--help" || first == "-h") {
    std::fputs(gpufrac::hook::hook_help().c_str(), stdout);
    return 0;
  }
  if (first == "--version") {
    std::printf("gpufrac-hook %s\n", gpufrac::build::kVersion);
    return 0;
  }
  auto args = gpufrac::hook::parse_hook_args(argc, argv);
  if (!args) {
    std::fprintf(stderr, "gpufrac-hook: %s\n", args.error().message.c_str());
    return 2;
  }
  auto state = gpufrac::fs::read_fd(STDIN_FILENO, gpufrac::bundle::kMaxStateBytes, "the OCI state on stdin");
  if (!state) {
    std::fprintf(stderr, "gpufrac-hook: %s\n", state.error().message.c_str());
    return args->stage == gpufrac::hook::Stage::poststop ? 0 : 1;
  }
  return gpufrac::hook::run_hook(*args, *state);
}
