// Names in a container that look like a request to gpufrac but are none (docs/architecture.md
// "Requests and allocation"): a gpufrac.io/ annotation that is neither a request key nor gpufrac's
// own, a GPUFRAC_* variable that is neither a request variable nor gpufrac's own, and a variable
// named like an annotation (-e gpufrac.io/fraction=...). A typo must not start a container without
// its share unnoticed: each is one line naming it, with the closest known name when it looks like a
// typo, and the node's `requests.unknown` decides (refuse, the default, or warn). The known names
// are core/request/request_keys.hpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

// "\"gpufrac.io/fracton\": unknown gpufrac annotation (did you mean gpufrac.io/fraction?); use ..."
std::string unknown_annotation_message(std::string_view key);

struct UnknownName {
  std::string message;     // one line
  std::string annotation;  // the annotation key ("" for a variable)
};

// Every unknown name: annotations in key order, then variables in the environment's order.
std::vector<UnknownName> unknown_request_names(const Annotations& annotations, const std::vector<std::string>& env);

// Applies requests.unknown: refuse returns the first unknown name as a user error (nothing else
// happens); warn returns the lines and removes the unknown annotations from `annotations`, so the
// request is read without them.
Result<std::vector<std::string>> check_request_names(Annotations& annotations, const std::vector<std::string>& env,
                                                     UnknownNames policy);

}  // namespace gpufrac
