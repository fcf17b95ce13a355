// The OpenSSL side of an ApiConfig (k8s/api_config.hpp): the CA bundle as an X509_STORE, the client
// certificate and its key, parsed from memory once at start; and what a failed verification of the
// API server's certificate means, in the operator's words. A CA without a PEM certificate, a client
// certificate or key that is not PEM, a key that is not the certificate's, or a certificate that has
// expired or is not valid yet is one line naming the kubeconfig entry (gpufrac-dra then refuses to
// start).
#pragma once

#include <ctime>
#include <memory>
#include <string>

#include <openssl/types.h>

#include "core/error.hpp"
#include "k8s/api_config.hpp"

namespace gpufrac::dra {

struct TlsMaterial {
  std::shared_ptr<X509_STORE> ca;  // null: the system's CAs
  std::shared_ptr<X509> client_cert;
  std::shared_ptr<EVP_PKEY> client_key;
};

// `now` decides whether the client certificate is within its validity.
Result<TlsMaterial> load_tls_material(const ApiConfig& config, std::time_t now);

// The line for an X509_V_ERR_* code met while verifying the API server's certificate for `host`:
// "the API server's certificate is not signed by the CA of cluster "kind" in FILE".
std::string describe_verify_error(long x509_error, const std::string& host, const ApiConfig& config);

// "2026-11-25 19:25:22 UTC" for an ASN1_TIME (a certificate's notBefore or notAfter).
std::string format_asn1_time(const ASN1_TIME* t);

}  // namespace gpufrac::dra
