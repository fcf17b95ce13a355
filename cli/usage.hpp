// Command-line mistakes, answered as the tools operators know do: `gpufrac` or a command group
// alone prints its help (exit 0); a parse error is one line on stderr, prefixed "gpufrac:", naming
// the command it happened in, suggesting the closest command or option (`gpufrac stauts` -> did
// you mean "status"?) and where the help is; exit 2 (kUsageExit).
#pragma once

#include <CLI/CLI.hpp>

#include "core/spelling.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufrac::cli {

inline constexpr int kUsageExit = 2;

// The innermost command the parser entered ("gpufrac", then its subcommands).
CLI::App* innermost(CLI::App& app);
// "gpufrac cdi list" for the cdi list subcommand.
std::string command_path(const CLI::App* app);
// Prints the one-line message for a parse error (exit code != 0) and returns kUsageExit.
int report_usage_error(CLI::App& app, const CLI::ParseError& e);
// After a successful parse: when the innermost command is a group (it has subcommands) and none
// was given, prints its help on stdout and returns true.
bool print_group_help(CLI::App& app);

}  // namespace gpufrac::cli
