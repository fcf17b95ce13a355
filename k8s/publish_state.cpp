#include "k8s/publish_state.hpp"

#include "core/text.hpp"
#include "k8s/slice_publisher.hpp"

namespace gpufrac::dra {

std::optional<LogLine> PublishState::after(const Result<PublishReport>& pass) {
  if (!pass) {
    if (failing_ == pass.error().message) return std::nullopt;
    failing_ = pass.error().message;
    return LogLine{true, "publishing ResourceSlices: " + *failing_ + " (trying again every resync)"};
  }
  const bool recovered = failing_.has_value();
  failing_.reset();
  if (!pass->changed())
    return recovered ? std::optional<LogLine>(LogLine{false, "ResourceSlices published again: up to date"})
                     : std::nullopt;
  return LogLine{false, text::cat("ResourceSlices", recovered ? " published again" : "", ": ", pass->created,
                                  " created, ", pass->updated, " updated, ", pass->deleted, " deleted")};
}

}  // namespace gpufrac::dra
