#include "k8s/api_client.hpp"

#include <cstdlib>
#include <stdexcept>

#include <httplib.h>  // Debian builds it with OpenSSL (CPPHTTPLIB_OPENSSL_SUPPORT from pkg-config)

#include "core/fs.hpp"
#include "core/text.hpp"
#include "core/yaml_util.hpp"

namespace gpufrac::dra {

namespace {

constexpr const char* kServiceAccount = "/var/run/secrets/kubernetes.io/serviceaccount";
constexpr std::size_t kMaxBody = 16u << 20;

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

Result<ApiResponse> ApiClient::call(const std::string& method, const std::string& path,
                                    const nlohmann::json& body) const {
  auto token = bearer(config_);
  if (!token) return std::unexpected(token.error());
  httplib::Client cli(config_.server);
  if (!cli.is_valid()) return user_error(text::cat("API server ", text::quote(config_.server), " is not a URL"));
  cli.set_connection_timeout(config_.timeout_s);
  cli.set_read_timeout(config_.timeout_s);
  cli.set_write_timeout(config_.timeout_s);
  if (!config_.ca_file.empty()) cli.set_ca_cert_path(config_.ca_file);
  if (!token->empty()) cli.set_bearer_token_auth(*token);
  httplib::Headers headers{{"Accept", "application/json"}};
  const std::string payload = body.is_null() ? "" : body.dump();
  if (method != "GET" && method != "POST" && method != "PUT" && method != "DELETE")
    throw std::logic_error("ApiClient::call: method " + method);  // a bug, not input
  httplib::Result r = method == "GET"    ? cli.Get(path, headers)
                      : method == "POST" ? cli.Post(path, headers, payload, "application/json")
                      : method == "PUT"  ? cli.Put(path, headers, payload, "application/json")
                                         : cli.Delete(path, headers, payload, "application/json");
  if (!r) return user_error(text::cat(method, " ", path, ": ", httplib::to_string(r.error())));
  if (r->body.size() > kMaxBody) return user_error(text::cat(method, " ", path, ": response over 16 MiB"));
  ApiResponse out{r->status, nlohmann::json::parse(r->body, nullptr, false)};
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}

std::string describe_failure(const std::string& method, const std::string& path, const ApiResponse& r) {
  std::string msg = text::cat(method, " ", path, ": HTTP ", r.status);
  if (r.body.is_object() && r.body.contains("message") && r.body["message"].is_string())
    msg += ": " + text::quote(r.body["message"].get<std::string>(), 200);
  else if (r.body.is_null())
    msg += " (the body is not JSON)";
  return msg;
}

}  // namespace gpufrac::dra
