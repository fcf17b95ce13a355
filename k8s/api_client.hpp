// The few Kubernetes API calls gpufrac-dra makes, over HTTPS (or HTTP for a test server) with a
// bearer token: in-cluster (KUBERNETES_SERVICE_HOST/PORT, the service account's token, re-read on
// every call since the kubelet rotates it, and CA), or from a kubeconfig (server, token or
// token-file, certificate-authority). Every call is bounded (10 s connect, 10 s read), so a hung
// API server fails a prepare well inside the kubelet's 45 s. Errors are one line with the method,
// the path and the status or transport error.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gpufrac::dra {

struct ApiConfig {
  std::string server;      // https://host:port or http://host:port
  std::string token;       // bearer token, or
  std::string token_file;  // a file holding it (read on every call)
  std::string ca_file;     // PEM bundle for https ("": the system's)
  int timeout_s = 10;
};

// In-cluster configuration; an error names what is missing.
Result<ApiConfig> in_cluster_config();
// The current context's cluster and user of a kubeconfig file (token auth only).
Result<ApiConfig> kubeconfig_config(const std::string& path);

struct ApiResponse {
  int status = 0;
  nlohmann::json body;  // null when the body is not JSON
};

class ApiClient {
 public:
  explicit ApiClient(ApiConfig config);
  // `body` null: no body. Transport failures are errors; any HTTP status is a response.
  Result<ApiResponse> call(const std::string& method, const std::string& path,
                           const nlohmann::json& body = nullptr) const;
  const ApiConfig& config() const { return config_; }

 private:
  ApiConfig config_;
};

// "GET /apis/...: 403 Forbidden: <the Status message>" for a response that is not 2xx.
std::string describe_failure(const std::string& method, const std::string& path, const ApiResponse& r);

}  // namespace gpufrac::dra
