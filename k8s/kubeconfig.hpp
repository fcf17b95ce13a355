// A kubeconfig read as kubectl reads it, for a static identity (gpufrac-dra(8), docs/architecture.md
// "API client"). The context is --context or the current-context; its cluster gives the server and
// the CA (certificate-authority, a path resolved against the directory of the file that names it,
// or certificate-authority-data, base64 of the PEM file, as kubeadm, kind, k3s and the cloud CLIs
// write it) or insecure-skip-tls-verify; its user gives a token, a tokenFile, or a client
// certificate and key (files or -data). $KUBECONFIG lists files merged as kubectl merges them: the
// first file that names a cluster, user or context wins, the first current-context wins, files
// that do not exist are skipped. Users that run a program for their credentials (exec,
// auth-provider), basic auth, impersonation, proxies and tls-server-name are refused. Every file
// named is read here, so a missing one stops gpufrac-dra at start; every refusal is one line naming
// the file, the entry and the accepted form.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "k8s/api_config.hpp"

namespace gpufrac::dra {

struct KubeconfigSource {
  std::vector<std::string> files;  // --kubeconfig FILE, or the files $KUBECONFIG lists
  bool from_env = false;           // the files came from $KUBECONFIG
  std::string context;             // --context; "" = the current-context
};

// $KUBECONFIG split as kubectl splits it: ':' between files, empty entries dropped.
std::vector<std::string> kubeconfig_files(std::string_view env);

Result<ApiConfig> kubeconfig_config(const KubeconfigSource& source);

// Strict base64 (standard alphabet, padding required; CR and LF ignored, as Go's decoder does).
Result<std::string> decode_base64(std::string_view text);

}  // namespace gpufrac::dra
