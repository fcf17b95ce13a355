// Requests in the container's environment, for engines that cannot set annotations (Docker before
// 24 has no --annotation): GPUFRAC_FRACTION, GPUFRAC_MEMORY, GPUFRAC_MIG_PROFILE, GPUFRAC_GPU,
// GPUFRAC_GPUS, GPUFRAC_POLICY, GPUFRAC_COMPUTE, GPUFRAC_COMPUTE_MODE and GPUFRAC_PRIORITY stand for the
// gpufrac.io/ annotations of the same name, with the same grammar and
// errors (naming the variable). Whoever starts the container sets both its annotations and its
// environment: the two are trusted alike. A request by annotation and one by environment in the
// same container is refused, naming one of each; a variable set twice is refused.
#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

namespace env_request {
inline constexpr const char* kPrefix = "GPUFRAC_";
// Written by gpufrac into containers it prepared (core/plan/plan.cpp); never a request.
inline constexpr const char* kDevices = "GPUFRAC_DEVICES";
inline constexpr const char* kMemoryLimits = "GPUFRAC_MEMORY_LIMITS";
}  // namespace env_request

// The keys a request is parsed from: the annotations, or (when the environment holds a request) the
// annotations with the GPUFRAC_* values under their gpufrac.io/ keys, and the names that messages
// give those keys.
struct RequestKeys {
  Annotations keys;
  KeyNames names;
};
Result<RequestKeys> request_keys(const Annotations& annotations, const std::vector<std::string>& env, bool aliases);

// parse_request over request_keys.
Result<std::optional<Request>> parse_container_request(const Annotations& annotations,
                                                       const std::vector<std::string>& env, bool aliases);

// Cheap test for the fast paths: an annotation request (has_gpufrac_request) or a request variable.
bool has_container_request(const Annotations& annotations, const std::vector<std::string>& env, bool aliases);

// The variable for an annotation key: gpufrac.io/mig-profile -> GPUFRAC_MIG_PROFILE (a GPUFRAC_
// name stays as it is).
std::string env_name_for(std::string_view key);

}  // namespace gpufrac
