// `gpufrac cdi generate | list | validate`: the CDI front-end's operator commands.
#pragma once

#include <string>

#include "cdi/cdi_names.hpp"
#include "cli/context.hpp"

namespace gpufrac::cli {

struct GenerateOptions {
  std::string output;  // "" = cdi.output; "-" = stdout
  std::string format;  // "", yaml, json
  std::string machine;
  std::string kind = std::string(cdi::kKind);
  bool json = false;  // a summary of what was written, as JSON
};

void add_cdi_generate_command(CLI::App& cdi, Context& ctx);

}  // namespace gpufrac::cli
