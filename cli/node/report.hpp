// What `gpufrac node setup|teardown` did, printed at the end: one line per action, or with --json
// one object {"command", "version", "actions": [...], "changed", "restart_pending"}.
#pragma once

#include <string>
#include <vector>

namespace gpufrac::cli::node {

struct Report {
  std::string command;  // "node setup", "node teardown"
  std::vector<std::string> actions;
  bool restart_pending = false;
  void add(std::string line) { actions.push_back(std::move(line)); }
  // Prints it (text: the actions, or `quiet_line` when there were none).
  void print(bool json, const std::string& version, const std::string& quiet_line) const;
};

// The report of the command running (one per process).
Report& report();

}  // namespace gpufrac::cli::node
