// Certificates made in process for the API client's tests (OpenSSL, EC P-256): a CA and leaves it
// signs, with a subjectAltName and a validity relative to now. Nothing is written to disk.
#pragma once

#include <memory>
#include <string>

#include <openssl/types.h>

namespace gpufrac::test {

struct Issued {
  std::shared_ptr<EVP_PKEY> key;
  std::shared_ptr<X509> cert;
  std::string cert_pem() const;
  std::string key_pem() const;
};

// A self-signed CA.
Issued make_ca(const std::string& common_name);
// A certificate `ca` signs; san e.g. "IP:127.0.0.1,DNS:localhost" ("" for none); valid from
// now + from_s to now + until_s seconds.
Issued make_leaf(const Issued& ca, const std::string& common_name, const std::string& san, long from_s = -60,
                 long until_s = 86400);

}  // namespace gpufrac::test
