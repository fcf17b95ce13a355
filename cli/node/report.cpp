#include "cli/node/report.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace gpufrac::cli::node {

Report& report() {
  static Report r;
  return r;
}

void Report::print(bool json, const std::string& version, const std::string& quiet_line) const {
  std::string out;
  if (json) {
    out = nlohmann::json{{"command", command},   {"version", version},          {"actions", actions},
                         {"warnings", warnings}, {"changed", !actions.empty()}, {"restart_pending", restart_pending}}
              .dump(2) +
          "\n";
  } else {
    for (const auto& a : actions) out += a + "\n";
    if (actions.empty()) out = quiet_line + "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  for (const auto& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
}

}  // namespace gpufrac::cli::node
