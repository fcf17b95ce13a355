#include "test_pki.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace gpufrac::test {

namespace {

std::shared_ptr<EVP_PKEY> new_key() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (!key) throw std::runtime_error("EVP_EC_gen");
  return {key, EVP_PKEY_free};
}

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) throw std::runtime_error("X509V3_EXT_conf_nid " + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`, issued by `issuer` (itself when null); signed by the caller.
std::shared_ptr<X509> issue(EVP_PKEY* key, const std::string& cn, X509* issuer, long from_s, long until_s) {
  static long serial = 1;
  std::shared_ptr<X509> cert(X509_new(), X509_free);
  X509* x = cert.get();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x), from_s);
  X509_gmtime_adj(X509_getm_notAfter(x), until_s);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
  add_ext(x, issuer ? issuer : x, NID_basic_constraints, issuer ? "CA:FALSE" : "critical,CA:TRUE");
  return cert;
}

void sign(X509* cert, EVP_PKEY* signer) {
  if (X509_sign(cert, signer, EVP_sha256()) == 0) throw std::runtime_error("X509_sign");
}

}  // namespace

std::string Issued::cert_pem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

std::string Issued::key_pem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

Issued make_ca(const std::string& common_name) {
  Issued ca{new_key(), nullptr};
  ca.cert = issue(ca.key.get(), common_name, nullptr, -3600, 86400);
  add_ext(ca.cert.get(), ca.cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  sign(ca.cert.get(), ca.key.get());
  return ca;
}

Issued make_leaf(const Issued& ca, const std::string& common_name, const std::string& san, long from_s, long until_s) {
  Issued leaf{new_key(), nullptr};
  leaf.cert = issue(leaf.key.get(), common_name, ca.cert.get(), from_s, until_s);
  if (!san.empty()) add_ext(leaf.cert.get(), ca.cert.get(), NID_subject_alt_name, san);
  sign(leaf.cert.get(), ca.key.get());
  return leaf;
}

}  // namespace gpufrac::test
