// What gpufrac-dra makes of an answer of the API server, before any field is used: the body is
// bounded (kMaxListBytes for a LIST, kMaxObjectBytes for anything else) and parsed by the strict,
// bounded JSON pass (core/spec/strict_json.hpp: no exception, 64 levels, 2^22 values), and every typed
// reader (k8s/slice_list.hpp, k8s/claim.hpp) checks each field's type before it reads it. An
// answer cut short, of the wrong types, without a field, or too large is an error value that the
// publisher retries at the next resync and a prepare reports as its claim's error; nothing here
// throws. Pure: ApiClient (k8s/api_client.hpp) feeds it what the transport received, and the
// fuzzer (tests/fuzz/fuzz_api_response.cpp) feeds it anything.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gpufrac::dra {

inline constexpr std::size_t kMaxListBytes = 64u << 20;    // a LIST answer (ResourceSliceList)
inline constexpr std::size_t kMaxObjectBytes = 16u << 20;  // one object, or a Status

struct ApiResponse {
  int status = 0;
  nlohmann::json body;  // null when the answer had no body or the body was not JSON
  std::string problem;  // why body is null although the answer had one ("" otherwise)
};

// The answer's status and body as received. A status outside 100-599 or a body over max_bytes is
// an error; a body that is not JSON is kept as `problem` (a proxy's HTML error page still says
// which status failed).
Result<ApiResponse> read_response(int status, std::string_view body, std::size_t max_bytes);

// "GET /apis/...: HTTP 403: <the Status message>" for an answer that is not 2xx.
std::string describe_failure(std::string_view method, std::string_view path, const ApiResponse& r);

// The JSON object of a 2xx answer; any other status, or a body that is not a JSON object, is an
// error naming the call.
Result<nlohmann::json> object_answer(const ApiResponse& r, std::string_view method, std::string_view path);

}  // namespace gpufrac::dra
