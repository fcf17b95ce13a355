// Where gpufrac-dra finds the API server and who it is there: the server's URL, the CA that signs
// the server's certificate, and the credentials (a bearer token, a token file re-read on every
// call, or a client certificate and key), all kept in memory as the kubeconfig or the service
// account gave them. Made by in_cluster_config() here or by kubeconfig_config()
// (k8s/kubeconfig.hpp); used by ApiClient (k8s/api_client.hpp). The labels name each item for the
// operator ("the CA of cluster "kind" in /root/.kube/config"), so every message can say which file
// to fix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac::dra {

struct ApiConfig {
  std::string server;           // https://host:port[/path] or http://host:port[/path]
  std::string ca_pem;           // the PEM bundle that signs the server's certificate ("": the system's CAs)
  bool insecure = false;        // insecure-skip-tls-verify: the server's certificate is not checked
  std::string client_cert_pem;  // a client certificate and its key, or neither
  std::string client_key_pem;
  std::string token;       // bearer token, or
  std::string token_file;  // a file holding it (read on every call)
  // For messages: "the CA of cluster "kind" in FILE", "the token of user "admin" in FILE".
  std::string cluster_label;  // "cluster "kind" in FILE" ("" in cluster)
  std::string ca_label = "the system's CAs";
  std::string credentials_label = "the anonymous user";
  std::string client_cert_label;  // "the client certificate of user "admin" in FILE" ("" without one)
  int timeout_s = 10;
  int deadline_s = 20;  // the whole answer, from its headers on
};

// The parts of ApiConfig::server. Accepted: http or https, a host name, an IPv4 address or an
// IPv6 address in brackets, an optional port (default 443 or 80), an optional path that every
// call's path is appended to (an API server behind a proxy); no user, query or fragment.
struct ServerUrl {
  bool tls = true;
  std::string host;  // without brackets
  int port = 443;
  std::string base_path;  // "" or "/k8s/clusters/c-1" (no trailing slash)
};
Result<ServerUrl> parse_server_url(std::string_view url);

// In-cluster configuration (KUBERNETES_SERVICE_HOST/PORT, the service account's token re-read on
// every call, its ca.crt read now); an error names what is missing.
Result<ApiConfig> in_cluster_config();

}  // namespace gpufrac::dra
