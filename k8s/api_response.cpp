#include "k8s/api_response.hpp"

#include "core/spec/strict_json.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

// A LIST of a node's slices holds a few thousand values; a claim a few hundred.
constexpr JsonLimits kLimits{.max_bytes = kMaxListBytes, .max_depth = 64, .max_values = 1u << 22};

// The strict pass's message without its runtime-oriented advice.
std::string json_problem(std::string message) {
  if (auto at = message.find("; gpufrac reads only JSON"); at != std::string::npos) message.resize(at);
  if (message.starts_with("body: ")) message.erase(0, 6);
  return message;
}

}  // namespace

Result<ApiResponse> read_response(int status, std::string_view body, std::size_t max_bytes) {
  if (status < 100 || status > 599)
    return user_error(text::cat("HTTP status ", status, " is not one; an HTTP status is 100 to 599"));
  if (body.size() > max_bytes)
    return user_error(
        text::cat("HTTP ", status, ": a body of ", body.size(), " bytes; at most ", max_bytes, " bytes are accepted"));
  ApiResponse out{status, nullptr, ""};
  if (body.empty()) return out;
  JsonLimits limits = kLimits;
  limits.max_bytes = max_bytes;
  try {
    auto parsed = parse_strict_json(body, "body", limits);
    if (parsed)
      out.body = std::move(*parsed);
    else
      out.problem = json_problem(parsed.error().message);
  } catch (const std::exception& e) {  // std::bad_alloc: the answer is dropped, the plugin carries on
    out.body = nullptr;
    out.problem = text::cat("cannot hold the answer (", e.what(), ")");
  }
  return out;
}

std::string describe_failure(std::string_view method, std::string_view path, const ApiResponse& r) {
  std::string msg = text::cat(method, " ", path, ": HTTP ", r.status);
  const auto& b = r.body;
  if (b.is_object()) {
    auto m = b.find("message");
    if (m != b.end() && m->is_string()) msg += ": " + text::quote(m->get_ref<const std::string&>(), 200);
  } else if (!r.problem.empty()) {
    msg += " (the body is not JSON)";
  }
  return msg;
}

Result<nlohmann::json> object_answer(const ApiResponse& r, std::string_view method, std::string_view path) {
  if (r.status < 200 || r.status > 299) return user_error(describe_failure(method, path, r));
  if (r.body.is_object()) return r.body;
  const std::string got = !r.problem.empty() ? r.problem : r.body.is_null() ? "no body" : r.body.type_name();
  return user_error(text::cat(method, " ", path, ": HTTP ", r.status, " answer is not a JSON object (", got,
                              "); the API server answers with one JSON object"));
}

}  // namespace gpufrac::dra
