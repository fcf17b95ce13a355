// The multi-GPU part of a request (docs/architecture.md "Requests and allocation"):
// gpufrac.io/gpus, how many distinct GPUs a share spans, and gpufrac.io/gpu naming several of them.
// Grammars only; request.cpp combines them with the size.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

inline constexpr const char* kGpusForm = "a whole number of GPUs from 1 to 16, e.g. 2";

// gpufrac.io/gpus: digits only, no sign or leading zero, 1 to kMaxGpusPerRequest. The message names
// `key` (the annotation, or its variable).
Result<std::uint32_t> parse_gpus(std::string_view key, std::string_view value);

// gpufrac.io/gpu: one GPU (index or GPU-<uuid>), or a comma-separated list of them, each once (as
// text: an index and a UUID of the same GPU are caught by the allocator).
Result<std::vector<GpuPin>> parse_gpu_list(std::string_view key, std::string_view value);

// The pins of a request onto it: one pin is Request::gpu, several Request::gpu_list, and their
// number must be what gpufrac.io/gpus asks for (one without it). `gpus_key` names gpufrac.io/gpus
// in the message.
Result<> apply_gpu_pins(Request& r, std::vector<GpuPin> pins, std::string_view key, std::string_view value,
                        std::string_view gpus_key);

}  // namespace gpufrac
