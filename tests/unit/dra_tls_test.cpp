// gpufrac-dra's API client over TLS (k8s/api_client.hpp, k8s/api_transport.hpp,
// k8s/tls_material.hpp) against an API server in this process (cpp-httplib's SSLServer) with
// certificates made here (test_pki.hpp): the CA and the client certificate from memory, and the one
// line each failure gives the operator.
#include <gtest/gtest.h>

#include <signal.h>

#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "k8s/api_client.hpp"
#include "k8s/tls_material.hpp"
#include "test_pki.hpp"

namespace gpufrac::dra {
namespace {

using test::Issued;

struct Pki {
  Issued ca = test::make_ca("test-ca");
  Issued other = test::make_ca("other-ca");
  Issued server = test::make_leaf(ca, "apiserver", "IP:127.0.0.1,DNS:localhost");
  Issued localhost_only = test::make_leaf(ca, "apiserver", "DNS:localhost");
  Issued client = test::make_leaf(ca, "gpufrac-dra", "");
  Issued stranger = test::make_leaf(other, "gpufrac-dra", "");
  Issued expired = test::make_leaf(ca, "gpufrac-dra", "", -7200, -3600);
  Issued future = test::make_leaf(ca, "gpufrac-dra", "", 3600, 7200);
};

const Pki& pki() {
  static const Pki p;
  return p;
}

// An API server on 127.0.0.1: 200 for the bearer token "good" or a client certificate the TLS
// layer verified, 401 otherwise. client_ca set: the handshake asks for a client certificate of it
// (and, with tls12, fails during the handshake, as TLS 1.2 does, on one it does not trust).
class Server {
 public:
  Server(const Issued& cert, const Issued* client_ca = nullptr, bool tls12 = false)
      : server_([&cert, client_ca, tls12](SSL_CTX& ctx) {
          SSL_CTX_use_certificate(&ctx, cert.cert.get());
          SSL_CTX_use_PrivateKey(&ctx, cert.key.get());
          if (tls12) SSL_CTX_set_max_proto_version(&ctx, TLS1_2_VERSION);
          if (client_ca) {
            X509_STORE* store = X509_STORE_new();
            X509_STORE_add_cert(store, client_ca->cert.get());
            SSL_CTX_set_cert_store(&ctx, store);
            SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
          }
          return true;
        }) {
    server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mutex_);
        client_ports_.push_back(req.remote_port);
      }
      const bool has_cert = req.ssl && SSL_get0_peer_certificate(req.ssl) != nullptr;
      res.status = has_cert || req.get_header_value("Authorization") == "Bearer good" ? 200 : 401;
      res.set_content(R"({"kind":"Status"})", "application/json");
    });
    port = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();  // stop() before this would be lost
  }
  ~Server() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port); }
  // The client's port of each request so far: one port, one connection.
  std::vector<int> client_ports() {
    std::lock_guard lock(mutex_);
    return client_ports_;
  }
  void keep_alive_max(std::size_t n) { server_.set_keep_alive_max_count(n); }
  int port = 0;

 private:
  std::mutex mutex_;
  std::vector<int> client_ports_;
  httplib::SSLServer server_;
  std::thread thread_;
};

ApiConfig config(const std::string& server, const Issued* ca, const Issued* client = nullptr) {
  ApiConfig c;
  c.server = server;
  if (ca) c.ca_pem = ca->cert_pem();
  c.ca_label = "the CA of cluster \"kind\" in /k";
  c.token = client ? "" : "good";
  c.credentials_label = "the token of user \"kind\" in /k";
  if (client) {
    c.client_cert_pem = client->cert_pem();
    c.client_key_pem = client->key_pem();
    c.client_cert_label = "the client certificate of user \"kind\" in /k";
    c.credentials_label = c.client_cert_label;
  }
  c.timeout_s = 5;
  return c;
}

// The start check's outcome: "ok", or "fatal: <line>" / "transient: <line>".
std::string checked(const ApiConfig& c) {
  signal(SIGPIPE, SIG_IGN);
  auto api = ApiClient::create(c, std::time(nullptr));
  if (!api) return "create: " + api.error().message;
  auto trouble = api->check("/api");
  if (!trouble) return "ok";
  return (trouble->fatal ? "fatal: " : "transient: ") + trouble->error.message;
}

TEST(DraTls, GetsReuseOneConnectionAndOtherMethodsOpenTheirOwn) {
  signal(SIGPIPE, SIG_IGN);
  Server server(pki().server);
  auto api = ApiClient::create(config(server.url(), &pki().ca), std::time(nullptr));
  ASSERT_TRUE(api);
  for (int i = 0; i < 3; ++i) {
    auto r = api->call("GET", "/apis/claims/" + std::to_string(i));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, 200);
  }
  auto ports = server.client_ports();
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[1], ports[0]);  // one handshake for three claims
  EXPECT_EQ(ports[2], ports[0]);
}

TEST(DraTls, AGetOnAConnectionTheServerClosedIsSentOnANewOne) {
  signal(SIGPIPE, SIG_IGN);
  Server server(pki().server);
  server.keep_alive_max(1);  // the server closes every connection after its first answer
  auto api = ApiClient::create(config(server.url(), &pki().ca), std::time(nullptr));
  ASSERT_TRUE(api);
  for (int i = 0; i < 3; ++i) {
    auto r = api->call("GET", "/apis/x");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, 200);
  }
  auto ports = server.client_ports();
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_NE(ports[1], ports[0]);
  EXPECT_NE(ports[2], ports[1]);
}

TEST(DraTls, TheClusterCaAndATokenOrAClientCertificateFromMemory) {
  Server server(pki().server, &pki().ca);
  EXPECT_EQ(checked(config(server.url(), &pki().ca)), "ok");
  EXPECT_EQ(checked(config(server.url(), &pki().ca, &pki().client)), "ok");
  ApiConfig insecure = config(server.url(), nullptr);
  insecure.insecure = true;
  EXPECT_EQ(checked(insecure), "ok");
  auto api = ApiClient::create(config(server.url(), &pki().ca), std::time(nullptr));
  ASSERT_TRUE(api);
  auto r = api->call("GET", "/apis/x");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
}

TEST(DraTls, TheServersCertificateMustBeTheClusterCasAndNameTheServer) {
  Server server(pki().server);
  EXPECT_EQ(checked(config(server.url(), &pki().other)),
            "fatal: the API server's certificate is not signed by the CA of cluster \"kind\" in /k");
  ApiConfig system = config(server.url(), nullptr);
  system.ca_label = "the system's CAs (cluster \"kind\" in /k names no certificate-authority)";
  EXPECT_EQ(checked(system),
            "fatal: the API server's certificate is not signed by the system's CAs (cluster "
            "\"kind\" in /k names no certificate-authority)");
  Server named(pki().localhost_only);
  EXPECT_EQ(checked(config(named.url(), &pki().ca)),
            "fatal: the API server's certificate does not name 127.0.0.1; use a server address its subjectAltName "
            "holds");
  EXPECT_EQ(checked(config("https://localhost:" + std::to_string(named.port), &pki().ca)), "ok");
}

TEST(DraTls, RefusedCredentialsAreFatalAndAnAbsentServerIsNot) {
  Server server(pki().server, &pki().ca);
  ApiConfig wrong = config(server.url(), &pki().ca);
  wrong.token = "bad";
  EXPECT_EQ(checked(wrong), "fatal: 401 from the API server: the token of user \"kind\" in /k is not accepted");
  auto api = ApiClient::create(wrong, std::time(nullptr));
  ASSERT_TRUE(api);
  EXPECT_EQ(api->call("GET", "/apis/x").error().message,
            "401 from the API server: the token of user \"kind\" in /k is not accepted");
  int port = server.port;
  {
    Server gone(pki().server);
    port = gone.port;
  }
  EXPECT_EQ(checked(config("https://127.0.0.1:" + std::to_string(port), &pki().ca)),
            "transient: cannot reach https://127.0.0.1:" + std::to_string(port) + ": connection refused");
}

TEST(DraTls, AClientCertificateTheServerRefusesDuringTheHandshake) {
  Server server(pki().server, &pki().ca, /*tls12=*/true);
  EXPECT_EQ(checked(config(server.url(), &pki().ca, &pki().stranger)),
            "fatal: the API server refused the client certificate of user \"kind\" in /k (tlsv1 alert unknown ca)");
}

TEST(DraTls, ClientCertificatesAreCheckedBeforeAnyConnection) {
  const std::time_t now = std::time(nullptr);
  ApiConfig c = config("https://127.0.0.1:1", &pki().ca, &pki().expired);
  auto expired = ApiClient::create(c, now);
  ASSERT_FALSE(expired);
  EXPECT_EQ(expired.error().message, "the client certificate of user \"kind\" in /k expired on " +
                                         format_asn1_time(X509_get0_notAfter(pki().expired.cert.get())) +
                                         "; renew it and update the kubeconfig");
  EXPECT_EQ(ApiClient::create(config("https://h", &pki().ca, &pki().future), now).error().message,
            "the client certificate of user \"kind\" in /k is valid only from " +
                format_asn1_time(X509_get0_notBefore(pki().future.cert.get())) + " (is this node's clock right?)");
  ApiConfig mismatch = config("https://h", &pki().ca, &pki().client);
  mismatch.client_key_pem = pki().stranger.key_pem();
  EXPECT_EQ(ApiClient::create(mismatch, now).error().message,
            "the client certificate of user \"kind\" in /k: its client-key is not the certificate's key");
  ApiConfig not_pem = config("https://h", &pki().ca, &pki().client);
  not_pem.client_cert_pem = "CERT";
  EXPECT_EQ(ApiClient::create(not_pem, now).error().message,
            "the client certificate of user \"kind\" in /k: not a PEM certificate (-----BEGIN CERTIFICATE-----)");
  not_pem = config("https://h", &pki().ca, &pki().client);
  not_pem.client_key_pem = "KEY";
  EXPECT_EQ(ApiClient::create(not_pem, now).error().message,
            "the client certificate of user \"kind\" in /k: its client-key is not a PEM private key without a "
            "passphrase");
  ApiConfig no_ca = config("https://h", nullptr);
  no_ca.ca_pem = "not a certificate";
  EXPECT_EQ(ApiClient::create(no_ca, now).error().message,
            "the CA of cluster \"kind\" in /k: no PEM certificate in it; give the CA's certificate (-----BEGIN "
            "CERTIFICATE-----)");
  EXPECT_EQ(ApiClient::create(config("ftp://h", nullptr), now).error().message.substr(0, 44),
            "server \"ftp://h\": not an http or https URL; ");
}

TEST(DraTls, ACaBundleTrustsEachOfItsCertificates) {
  Server server(pki().server);
  ApiConfig c = config(server.url(), nullptr);
  c.ca_pem = pki().other.cert_pem() + pki().ca.cert_pem();
  EXPECT_EQ(checked(c), "ok");
}

TEST(DraTls, VerifyErrorsInTheOperatorsWords) {
  ApiConfig c = config("https://h", &pki().ca);
  EXPECT_EQ(describe_verify_error(X509_V_ERR_CERT_HAS_EXPIRED, "h", c), "the API server's certificate has expired");
  EXPECT_EQ(describe_verify_error(X509_V_ERR_CERT_NOT_YET_VALID, "h", c),
            "the API server's certificate is not valid yet (is this node's clock right?)");
  EXPECT_EQ(describe_verify_error(X509_V_ERR_CERT_REVOKED, "h", c),
            "the API server's certificate cannot be verified with the CA of cluster \"kind\" in /k: certificate "
            "revoked");
}

}  // namespace
}  // namespace gpufrac::dra
