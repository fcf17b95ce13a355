// Every name a container can use to speak to gpufrac, in one place: the gpufrac.io/ annotation keys
// of a request with the GPUFRAC_* variable that stands for each, and the names gpufrac itself writes
// into containers. The request parser (core/request/request.cpp), the environment reader
// (core/request/env_request.cpp) and the check for misspelt names (core/request/unknown_keys.hpp)
// all read these tables: a new request key is one line in kRequestKeys.
#pragma once

#include <array>
#include <string_view>

#include "core/request/request.hpp"

namespace gpufrac {

struct RequestKey {
  std::string_view annotation;  // gpufrac.io/fraction
  std::string_view variable;    // GPUFRAC_FRACTION
};

// The request keys, in the order the parser reads them and messages list them.
inline constexpr std::array kRequestKeys{
    RequestKey{annotation::kFraction, "GPUFRAC_FRACTION"},
    RequestKey{annotation::kMemory, "GPUFRAC_MEMORY"},
    RequestKey{annotation::kMigProfile, "GPUFRAC_MIG_PROFILE"},
    RequestKey{annotation::kGpu, "GPUFRAC_GPU"},
    RequestKey{annotation::kPolicy, "GPUFRAC_POLICY"},
    RequestKey{annotation::kCompute, "GPUFRAC_COMPUTE"},
    RequestKey{annotation::kComputeMode, "GPUFRAC_COMPUTE_MODE"},
    RequestKey{annotation::kPriority, "GPUFRAC_PRIORITY"},
    RequestKey{annotation::kGpus, "GPUFRAC_GPUS"},
};

// gpufrac.io/ annotations that are gpufrac's own and never a request (the runtime wrapper's marker).
inline constexpr std::array<std::string_view, 1> kOwnAnnotations{annotation::kInjected};

// GPUFRAC_* variables that are not requests: the config a program reads, what gpufrac writes into
// the containers it prepared (core/plan/plan.cpp), and the shim's limit file override
// (include/gpufrac/limits_abi.h GPUFRAC_LIMITS_ENV); and every variable of the simulated driver
// that a simulated node's containers run (tests/fakes: GPUFRAC_FAKE_CUDA_*, GPUFRAC_FAKE_NVML_*).
inline constexpr std::array<std::string_view, 4> kOwnVariables{"GPUFRAC_CONFIG", "GPUFRAC_DEVICES",
                                                               "GPUFRAC_MEMORY_LIMITS", "GPUFRAC_LIMITS_FILE"};
inline constexpr std::array<std::string_view, 1> kOwnVariablePrefixes{"GPUFRAC_FAKE_"};

// The entry of an annotation key or of a variable; null when it is not a request key.
const RequestKey* request_key_by_annotation(std::string_view key);
const RequestKey* request_key_by_variable(std::string_view name);
bool is_own_annotation(std::string_view key);
bool is_own_variable(std::string_view name);

// "gpufrac.io/fraction, gpufrac.io/memory, ... or gpufrac.io/policy" (and the variables' list).
std::string request_annotation_list();
std::string request_variable_list();

}  // namespace gpufrac
