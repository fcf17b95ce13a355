// The few Kubernetes API calls gpufrac-dra makes, over HTTPS (or HTTP for a test server), with the
// identity of its ApiConfig (k8s/api_config.hpp): in cluster, the service account's token (re-read
// on every call, since the kubelet rotates it) and CA; from a kubeconfig (k8s/kubeconfig.hpp), a
// token, a token file or a client certificate, and the cluster's CA, all from memory
// (k8s/api_transport.hpp); GETs reuse open connections (ConnectionPool). Every call is bounded (10 s connect, 10 s per
// read, 20 s for the whole answer once its headers are in; the body at most max_bytes, k8s/api_response.hpp), so a hung
// or endless API server fails a prepare well inside the kubelet's 45 s. The answer is parsed without exceptions
// (k8s/api_response.hpp). A call that gets no usable answer is one line: the server's certificate, the credentials
// refused ("401 from the API server: the token of user "admin" in FILE is not accepted"), the server unreachable, or
// the method, the path and what went wrong.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "k8s/api_config.hpp"
#include "k8s/api_response.hpp"
#include "k8s/api_transport.hpp"
#include "k8s/tls_material.hpp"

namespace gpufrac::dra {

class ApiClient {
 public:
  // Checks the server URL and parses the TLS material (k8s/tls_material.hpp) with `now` for the
  // client certificate's validity; an error is one line naming the kubeconfig entry.
  static Result<ApiClient> create(ApiConfig config, std::time_t now);

  // `body` null: no body. Transport failures, a 401, an answer over max_bytes and one that outlasts
  // the deadline are errors; any other HTTP status is a response. Never throws for what the server
  // sends.
  Result<ApiResponse> call(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr,
                           std::size_t max_bytes = kMaxObjectBytes) const;

  // The start check: GET `path` once. nullopt when the server answered with anything but 401;
  // otherwise the call's error, fatal when waiting will not mend it (the server's certificate does
  // not verify, the credentials are refused).
  struct Trouble {
    Error error;
    bool fatal = false;
  };
  std::optional<Trouble> check(const std::string& path, std::size_t max_bytes = kMaxListBytes) const;

  const ApiConfig& config() const { return config_; }

 private:
  ApiClient(ApiConfig config, ServerUrl url, TlsMaterial tls);
  std::expected<ApiResponse, CallFailure> exchange(const std::string& method, const std::string& path,
                                                   const nlohmann::json& body, std::size_t max_bytes) const;
  // One send on `client` (reused: from the pool); the client goes back to the pool after a GET
  // answered in full.
  struct Sent;
  Sent send_on(std::unique_ptr<httplib::ClientImpl> client, bool reused, const std::string& token,
               const std::string& method, const std::string& path, const nlohmann::json& body,
               std::size_t max_bytes) const;

  ApiConfig config_;
  ServerUrl url_;
  TlsMaterial tls_;
  std::shared_ptr<ConnectionPool> pool_ = std::make_shared<ConnectionPool>();
};

}  // namespace gpufrac::dra
