// The few Kubernetes API calls gpufrac-dra makes, over HTTPS (or HTTP for a test server) with a
// bearer token: in-cluster (KUBERNETES_SERVICE_HOST/PORT, the service account's token, re-read on
// every call since the kubelet rotates it, and CA), or from a kubeconfig (server, token or
// token-file, certificate-authority). Every call is bounded (10 s connect, 10 s per read, 20 s for
// the whole answer once its headers are in; the body at most max_bytes, k8s/api_response.hpp), so
// a hung or endless API server fails a prepare well inside the kubelet's 45 s. The answer is parsed
// without exceptions (k8s/api_response.hpp); errors are one line with the method, the path and the
// status or transport error.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "k8s/api_response.hpp"

namespace gpufrac::dra {

struct ApiConfig {
  std::string server;      // https://host:port or http://host:port
  std::string token;       // bearer token, or
  std::string token_file;  // a file holding it (read on every call)
  std::string ca_file;     // PEM bundle for https ("": the system's)
  int timeout_s = 10;
  int deadline_s = 20;  // the whole answer, from its headers on
};

// In-cluster configuration; an error names what is missing.
Result<ApiConfig> in_cluster_config();
// The current context's cluster and user of a kubeconfig file (token auth only).
Result<ApiConfig> kubeconfig_config(const std::string& path);

class ApiClient {
 public:
  explicit ApiClient(ApiConfig config);
  // `body` null: no body. Transport failures, an answer over max_bytes and one that outlasts the
  // deadline are errors; any HTTP status is a response. Never throws for what the server sends.
  Result<ApiResponse> call(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr,
                           std::size_t max_bytes = kMaxObjectBytes) const;
  const ApiConfig& config() const { return config_; }

 private:
  ApiConfig config_;
};

}  // namespace gpufrac::dra
