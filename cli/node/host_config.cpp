#include "cli/node/host_config.hpp"

#include <string_view>

#include "core/text.hpp"

namespace gpufrac::cli::node {

namespace {

constexpr std::string_view kMarker = "# The files `gpufrac node setup` installed";

// A top-level key of ours: "shim:", "hook:" or "cli:" at column 0.
bool ours(std::string_view line) {
  for (std::string_view key : {"shim:", "hook:", "cli:"})
    if (line.starts_with(key)) return true;
  return false;
}

// An indented line, or a blank or comment line: part of the entry above it.
bool continues(std::string_view line) {
  return line.empty() || line.front() == ' ' || line.front() == '\t';
}

}  // namespace

std::string render_host_config(const std::string& source, const Installed& installed) {
  std::string out;
  bool skipping = false;
  for (const auto& line : text::split(source, '\n')) {
    if (ours(line) || line.starts_with(kMarker)) {
      skipping = true;
      continue;
    }
    if (skipping && continues(line) && !line.empty()) continue;
    skipping = false;
    out += line + "\n";
  }
  while (out.size() >= 2 && out.ends_with("\n\n")) out.pop_back();
  if (out == "\n") out.clear();
  if (!out.empty()) out += "\n";
  out += text::cat(kMarker, " (", installed.dir, " -> the version in use).\n", "shim:\n  path: ", installed.shim, "\n",
                   "hook:\n  path: ", installed.hook, "\n", "cli:\n  path: ", installed.cli, "\n");
  return out;
}

}  // namespace gpufrac::cli::node
