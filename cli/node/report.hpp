// What `gpufrac node setup|teardown` did, printed at the end: one line per action, or with --json
// one object {"command", "version", "actions": [...], "warnings": [...], "changed", "restart_pending"}.
// Warnings (what setup could not do, and what to do instead) go to stderr, "warning: " first.
#pragma once

#include <string>
#include <vector>

namespace gpufrac::cli::node {

struct Report {
  std::string command;  // "node setup", "node teardown"
  std::vector<std::string> actions;
  std::vector<std::string> warnings;
  bool restart_pending = false;
  void add(std::string line) { actions.push_back(std::move(line)); }
  void warn(std::string line) { warnings.push_back(std::move(line)); }
  // Prints it (text: the actions, or `quiet_line` when there were none).
  void print(bool json, const std::string& version, const std::string& quiet_line) const;
};

// The report of the command running (one per process).
Report& report();

}  // namespace gpufrac::cli::node
