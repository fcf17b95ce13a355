// What the publisher's loop logs: one line per change of state, not one per resync. A failing pass
// logs its error once (and again only when the error changes), the first pass that succeeds after
// failures says so, and a pass that changes slices says what it changed. Pure.
#pragma once

#include <optional>
#include <string>

#include "core/error.hpp"

namespace gpufrac::dra {

struct PublishReport;

struct LogLine {
  bool warning = false;
  std::string text;
};

class PublishState {
 public:
  // The line for this pass, when there is one to log.
  std::optional<LogLine> after(const Result<PublishReport>& pass);

 private:
  std::optional<std::string> failing_;  // the error of the last pass, while passes fail
};

}  // namespace gpufrac::dra
