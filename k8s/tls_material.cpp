#include "k8s/tls_material.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

constexpr std::size_t kMaxBundle = 64;  // certificates in one CA bundle

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

BioPtr memory_bio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::shared_ptr<X509> read_certificate(BIO* bio) {
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  return cert ? std::shared_ptr<X509>(cert, X509_free) : nullptr;
}

Result<std::shared_ptr<X509_STORE>> ca_store(const ApiConfig& c) {
  std::shared_ptr<X509_STORE> store(X509_STORE_new(), X509_STORE_free);
  BioPtr bio = memory_bio(c.ca_pem);
  std::size_t count = 0;
  while (count < kMaxBundle) {
    auto cert = read_certificate(bio.get());
    if (!cert) break;
    if (X509_STORE_add_cert(store.get(), cert.get()) != 1) break;
    ++count;
  }
  ERR_clear_error();  // the end of the bundle reads as an error
  if (count == 0)
    return user_error(c.ca_label +
                      ": no PEM certificate in it; give the CA's certificate (-----BEGIN CERTIFICATE-----)");
  return store;
}

// The client certificate's validity against `now`.
Result<> check_validity(X509* cert, const std::string& label, std::time_t now) {
  if (X509_cmp_time(X509_get0_notAfter(cert), &now) < 0)
    return user_error(text::cat(label, " expired on ", format_asn1_time(X509_get0_notAfter(cert)),
                                "; renew it and update the kubeconfig"));
  if (X509_cmp_time(X509_get0_notBefore(cert), &now) > 0)
    return user_error(text::cat(label, " is valid only from ", format_asn1_time(X509_get0_notBefore(cert)),
                                " (is this node's clock right?)"));
  return {};
}

Result<> client_identity(const ApiConfig& c, std::time_t now, TlsMaterial& out) {
  BioPtr cert_bio = memory_bio(c.client_cert_pem);
  out.client_cert = read_certificate(cert_bio.get());
  ERR_clear_error();
  if (!out.client_cert)
    return user_error(c.client_cert_label + ": not a PEM certificate (-----BEGIN CERTIFICATE-----)");
  BioPtr key_bio = memory_bio(c.client_key_pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  ERR_clear_error();
  if (!key) return user_error(c.client_cert_label + ": its client-key is not a PEM private key without a passphrase");
  out.client_key = std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free);
  const bool match = X509_check_private_key(out.client_cert.get(), key) == 1;
  ERR_clear_error();
  if (!match) return user_error(c.client_cert_label + ": its client-key is not the certificate's key");
  return check_validity(out.client_cert.get(), c.client_cert_label, now);
}

}  // namespace

Result<TlsMaterial> load_tls_material(const ApiConfig& c, std::time_t now) {
  TlsMaterial out;
  if (!c.ca_pem.empty()) {
    auto store = ca_store(c);
    if (!store) return std::unexpected(store.error());
    out.ca = std::move(*store);
  }
  if (!c.client_cert_pem.empty())
    if (auto r = client_identity(c, now, out); !r) return std::unexpected(r.error());
  return out;
}

std::string describe_verify_error(long e, const std::string& host, const ApiConfig& c) {
  switch (e) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return "the API server's certificate is not signed by " + c.ca_label;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return text::cat("the API server's certificate does not name ", host,
                       "; use a server address its subjectAltName holds");
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return "the API server's certificate has expired";
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return "the API server's certificate is not valid yet (is this node's clock right?)";
    default:
      return text::cat("the API server's certificate cannot be verified with ", c.ca_label, ": ",
                       X509_verify_cert_error_string(e));
  }
}

std::string format_asn1_time(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return "an unreadable date";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace gpufrac::dra
