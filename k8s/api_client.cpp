#include "k8s/api_client.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>

#include <httplib.h>  // Debian builds it with OpenSSL (CPPHTTPLIB_OPENSSL_SUPPORT from pkg-config)

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

Result<std::string> bearer(const ApiConfig& c) {
  if (c.token_file.empty()) return c.token;
  auto t = fs::read_file(c.token_file, 64u << 10);
  if (!t) return std::unexpected(t.error().wrap("bearer token"));
  return trimmed(*t);
}

// The answer's body as it arrives: refused past max_bytes (announced by Content-Length, or counted)
// or past the deadline; `problem` says which.
class BodySink {
 public:
  BodySink(std::size_t max_bytes, int deadline_s)
      : max_bytes_(max_bytes),
        deadline_s_(deadline_s),
        deadline_(std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s)) {}
  bool headers(const httplib::Response& r) {
    auto announced = text::parse_u64(r.get_header_value("Content-Length"));
    if (announced && *announced > max_bytes_)
      return refuse(text::cat("the answer announces ", *announced, " bytes; at most ", max_bytes_, " are accepted"));
    return in_time();
  }
  bool append(const char* data, std::size_t n) {
    if (body.size() + n > max_bytes_)
      return refuse(text::cat("the answer is larger than ", max_bytes_, " bytes; at most that is accepted"));
    body.append(data, n);
    return in_time();
  }
  std::string body;
  std::string problem;

 private:
  bool in_time() {
    if (std::chrono::steady_clock::now() <= deadline_) return true;
    return refuse(text::cat("the answer took longer than ", deadline_s_, " s; an answer must be complete by then"));
  }
  bool refuse(std::string why) {
    problem = std::move(why);
    return false;
  }
  std::size_t max_bytes_;
  int deadline_s_;
  std::chrono::steady_clock::time_point deadline_;
};

httplib::Request request(const std::string& method, const std::string& path, const nlohmann::json& body,
                         const ServerUrl& url, BodySink& sink) {
  httplib::Request req;
  req.method = method;
  req.path = url.base_path + path;
  req.headers = {{"Accept", "application/json"}};
  if (url.host.find(':') != std::string::npos)  // cpp-httplib would write an IPv6 host without brackets
    req.headers.emplace("Host", text::cat("[", url.host, "]:", url.port));
  if (!body.is_null()) {
    req.body = body.dump();
    req.headers.emplace("Content-Type", "application/json");
  }
  req.response_handler = [&sink](const httplib::Response& r) { return sink.headers(r); };
  req.content_receiver = [&sink](const char* d, std::size_t n, std::uint64_t, std::uint64_t) {
    return sink.append(d, n);
  };
  return req;
}

}  // namespace

Result<ApiClient> ApiClient::create(ApiConfig config, std::time_t now) {
  auto url = parse_server_url(config.server);
  if (!url) return std::unexpected(url.error());
  auto tls = load_tls_material(config, now);
  if (!tls) return std::unexpected(tls.error());
  return ApiClient(std::move(config), std::move(*url), std::move(*tls));
}

ApiClient::ApiClient(ApiConfig config, ServerUrl url, TlsMaterial tls)
    : config_(std::move(config)), url_(std::move(url)), tls_(std::move(tls)) {}

struct ApiClient::Sent {
  std::expected<ApiResponse, CallFailure> answer;
  bool stale = false;  // a reused connection failed at once, before any answer: send again on a new one
};

ApiClient::Sent ApiClient::send_on(std::unique_ptr<httplib::ClientImpl> cli, bool reused, const std::string& token,
                                   const std::string& method, const std::string& path, const nlohmann::json& body,
                                   std::size_t max_bytes) const {
  const std::string what = text::cat(method, " ", path);
  BodySink sink(max_bytes, config_.deadline_s);
  httplib::Response res;
  if (!token.empty()) cli->set_bearer_token_auth(token);
  httplib::Request req = request(method, path, body, url_, sink);
  httplib::Error error = httplib::Error::Success;
  reset_call_state();
  const auto sent_at = std::chrono::steady_clock::now();
  if (!cli->send(req, res, error)) {
    if (!sink.problem.empty()) return {std::unexpected(CallFailure{what + ": " + sink.problem})};
    CallFailure f = transport_failure(error, url_, config_);
    if (f.line.empty()) f.line = text::cat(what, ": ", httplib::to_string(error));
    // A kept connection the server closed fails at once; one that timed out is not sent again
    // (that would double the wait of a hung server).
    const bool quick = std::chrono::steady_clock::now() - sent_at < std::chrono::seconds(config_.timeout_s) / 2;
    return {std::unexpected(std::move(f)), reused && res.status == -1 && quick};
  }
  if (method == "GET") pool_->give_back(std::move(cli));
  if (res.status == 401)
    return {std::unexpected(
        CallFailure{"401 from the API server: " + config_.credentials_label + " is not accepted", true})};
  auto out = read_response(res.status, sink.body, max_bytes);
  if (!out) return {std::unexpected(CallFailure{out.error().wrap(what).message})};
  return {std::move(*out)};
}

std::expected<ApiResponse, CallFailure> ApiClient::exchange(const std::string& method, const std::string& path,
                                                            const nlohmann::json& body, std::size_t max_bytes) const {
  auto token = bearer(config_);
  if (!token) return std::unexpected(CallFailure{token.error().message});
  try {  // cpp-httplib's own exceptions end here, as one line
    if (method == "GET")
      if (auto idle = pool_->take()) {
        auto sent = send_on(std::move(idle), true, *token, method, path, body, max_bytes);
        if (!sent.stale) return std::move(sent.answer);
      }
    auto cli = make_client(url_, tls_, config_);
    if (!cli) return std::unexpected(CallFailure{cli.error().message});
    if (method == "GET") (*cli)->set_keep_alive(true);
    return send_on(std::move(*cli), false, *token, method, path, body, max_bytes).answer;
  } catch (const std::exception& e) {
    return std::unexpected(CallFailure{text::cat(method, " ", path, ": the HTTP client failed: ", e.what())});
  }
}

Result<ApiResponse> ApiClient::call(const std::string& method, const std::string& path, const nlohmann::json& body,
                                    std::size_t max_bytes) const {
  if (method != "GET" && method != "POST" && method != "PUT" && method != "DELETE")
    throw std::logic_error("ApiClient::call: method " + method);  // a bug, not input
  auto r = exchange(method, path, body, max_bytes);
  if (!r) return user_error(std::move(r.error().line));
  return std::move(*r);
}

std::optional<ApiClient::Trouble> ApiClient::check(const std::string& path, std::size_t max_bytes) const {
  auto r = exchange("GET", path, nullptr, max_bytes);
  if (r) return std::nullopt;
  return Trouble{Error{std::move(r.error().line), 0, ErrorKind::internal}, r.error().credentials};
}

}  // namespace gpufrac::dra
