#include "k8s/api_client.hpp"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include <httplib.h>  // Debian builds it with OpenSSL (CPPHTTPLIB_OPENSSL_SUPPORT from pkg-config)

#include "core/fs.hpp"
#include "core/text.hpp"
#include "core/yaml_util.hpp"

namespace gpufrac::dra {

namespace {

constexpr const char* kServiceAccount = "/var/run/secrets/kubernetes.io/serviceaccount";

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

Result<std::string> bearer(const ApiConfig& c) {
  if (c.token_file.empty()) return c.token;
  auto t = fs::read_file(c.token_file, 64u << 10);
  if (!t) return std::unexpected(t.error().wrap("service account token"));
  return trimmed(*t);
}

}  // namespace

Result<ApiConfig> in_cluster_config() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port)
    return user_error("not in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); pass --kubeconfig FILE");
  const std::string h = std::string(host).find(':') != std::string::npos ? text::cat("[", host, "]") : host;
  return ApiConfig{text::cat("https://", h, ":", port), "", text::cat(kServiceAccount, "/token"),
                   text::cat(kServiceAccount, "/ca.crt"), 10};
}

Result<ApiConfig> kubeconfig_config(const std::string& path) {
  auto text = fs::read_file(path, 1u << 20);
  if (!text) return std::unexpected(text.error().wrap("kubeconfig"));
  try {
    YAML::Node doc = YAML::Load(*text);
    const std::string current = doc["current-context"] ? doc["current-context"].as<std::string>() : "";
    auto pick = [&](const char* list, const std::string& name) -> YAML::Node {
      for (const auto& item : doc[list])
        if (name.empty() || item["name"].as<std::string>() == name) return item;
      return YAML::Node();
    };
    std::string cluster_name, user_name;
    if (auto ctx = pick("contexts", current); ctx && ctx["context"]) {
      cluster_name = ctx["context"]["cluster"].as<std::string>();
      user_name = ctx["context"]["user"] ? ctx["context"]["user"].as<std::string>() : "";
    }
    auto cluster = pick("clusters", cluster_name);
    auto user = pick("users", user_name);
    if (!cluster || !cluster["cluster"] || !cluster["cluster"]["server"])
      return user_error(path + ": no cluster with a server in the current context");
    ApiConfig c;
    c.server = cluster["cluster"]["server"].as<std::string>();
    if (cluster["cluster"]["certificate-authority"])
      c.ca_file = cluster["cluster"]["certificate-authority"].as<std::string>();
    if (user && user["user"] && user["user"]["token"]) c.token = user["user"]["token"].as<std::string>();
    if (user && user["user"] && user["user"]["tokenFile"]) c.token_file = user["user"]["tokenFile"].as<std::string>();
    return c;
  } catch (const std::exception& e) {
    return user_error(path + ": not a kubeconfig (" + e.what() + ")");
  }
}

ApiClient::ApiClient(ApiConfig config) : config_(std::move(config)) {}

namespace {

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

std::unique_ptr<httplib::Client> client_for(const ApiConfig& c, const std::string& token) {
  auto cli = std::make_unique<httplib::Client>(c.server);
  cli->set_connection_timeout(c.timeout_s);
  cli->set_read_timeout(c.timeout_s);
  cli->set_write_timeout(c.timeout_s);
  if (!c.ca_file.empty()) cli->set_ca_cert_path(c.ca_file);
  if (!token.empty()) cli->set_bearer_token_auth(token);
  return cli;
}

}  // namespace

Result<ApiResponse> ApiClient::call(const std::string& method, const std::string& path, const nlohmann::json& body,
                                    std::size_t max_bytes) const {
  if (method != "GET" && method != "POST" && method != "PUT" && method != "DELETE")
    throw std::logic_error("ApiClient::call: method " + method);  // a bug, not input
  auto token = bearer(config_);
  if (!token) return std::unexpected(token.error());
  const std::string what = text::cat(method, " ", path);
  BodySink sink(max_bytes, config_.deadline_s);
  httplib::Response res;
  try {  // cpp-httplib's own exceptions end here, as one line
    auto cli = client_for(config_, *token);
    if (!cli->is_valid()) return user_error(text::cat("API server ", text::quote(config_.server), " is not a URL"));
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.headers = {{"Accept", "application/json"}};
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.emplace("Content-Type", "application/json");
    }
    req.response_handler = [&](const httplib::Response& r) { return sink.headers(r); };
    req.content_receiver = [&](const char* d, std::size_t n, std::uint64_t, std::uint64_t) {
      return sink.append(d, n);
    };
    httplib::Error error = httplib::Error::Success;
    if (!cli->send(req, res, error))
      return user_error(text::cat(what, ": ", sink.problem.empty() ? httplib::to_string(error) : sink.problem));
  } catch (const std::exception& e) {
    return user_error(text::cat(what, ": the HTTP client failed: ", e.what()));
  }
  auto out = read_response(res.status, sink.body, max_bytes);
  if (!out) return std::unexpected(out.error().wrap(what));
  return out;
}

}  // namespace gpufrac::dra
