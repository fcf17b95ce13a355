#include "k8s/api_transport.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <httplib.h>  // Debian builds it with OpenSSL (CPPHTTPLIB_OPENSSL_SUPPORT from pkg-config)
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

// What OpenSSL met on this thread during the current call (each call runs on one thread).
thread_local long t_verify_error = X509_V_OK;

int record_verify_error(int ok, X509_STORE_CTX* ctx) {
  if (!ok && t_verify_error == X509_V_OK) t_verify_error = X509_STORE_CTX_get_error(ctx);
  return ok;
}

// The CA (or the system's), the peer check and the host check, on the client's context: the
// handshake fails on a certificate that does not verify, and record_verify_error says why.
Result<> set_up_tls(SSL_CTX* ctx, const ServerUrl& url, const TlsMaterial& tls, const ApiConfig& c) {
  if (c.insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return {};
  }
  if (tls.ca) {
    X509_STORE_up_ref(tls.ca.get());  // the context takes this reference
    SSL_CTX_set_cert_store(ctx, tls.ca.get());
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return user_error("cannot load the system's CAs");
  }
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  const bool address = X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str()) == 1;
  if (!address && X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), url.host.size()) != 1)
    return user_error(text::cat("cannot check the API server's certificate for ", text::quote(url.host)));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, record_verify_error);
  return {};
}

// The errno of one connection attempt (0: it connected), bounded by timeout_s.
int connect_error(const addrinfo* a, int timeout_s) {
  fs::UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
  if (!fd) return errno;
  if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  pollfd p{fd.get(), POLLOUT, 0};
  const int n = ::poll(&p, 1, timeout_s * 1000);
  if (n <= 0) return n == 0 ? ETIMEDOUT : errno;
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

// Why no connection could be made, found by trying again (cpp-httplib keeps no errno):
// "connection refused", "no route to host", "cannot resolve api.example: Name or service not known".
std::string why_unreachable(const ServerUrl& url, int timeout_s) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = text::cat(url.port);
  if (int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return text::cat("cannot resolve ", url.host, ": ", ::gai_strerror(rc));
  int err = 0;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next)
    if ((err = connect_error(a, timeout_s)) == 0) break;
  ::freeaddrinfo(found);
  if (err == 0) return "the connection failed (a second try connected)";
  std::string why = std::strerror(err);
  if (!why.empty() && why[0] >= 'A' && why[0] <= 'Z') why[0] = static_cast<char>(why[0] - 'A' + 'a');
  return why;
}

bool certificate_alert(unsigned long e);

// The TLS error on this thread's queue that says why: a certificate alert when there is one
// ("tlsv1 alert unknown ca"), else the first error (what followed it is OpenSSL tearing down); 0
// for none.
unsigned long tls_error() {
  unsigned long first = 0;
  while (unsigned long e = ERR_get_error()) {
    if (certificate_alert(e)) {
      ERR_clear_error();
      return e;
    }
    if (first == 0) first = e;
  }
  return first;
}

std::string reason(unsigned long e) {
  const char* r = ERR_reason_error_string(e);
  return r ? r : text::cat("TLS error ", e);
}

bool certificate_alert(unsigned long e) {
  if (ERR_GET_LIB(e) != ERR_LIB_SSL) return false;
  switch (ERR_GET_REASON(e)) {
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
    case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return true;
    default:
      return false;
  }
}

}  // namespace

Result<std::unique_ptr<httplib::ClientImpl>> make_client(const ServerUrl& url, const TlsMaterial& tls,
                                                         const ApiConfig& c) {
  std::unique_ptr<httplib::ClientImpl> cli;
  if (url.tls) {
    auto ssl = std::make_unique<httplib::SSLClient>(url.host, url.port, tls.client_cert.get(), tls.client_key.get());
    if (!ssl->is_valid()) return user_error("cannot set up TLS with " + c.server);
    ssl->enable_server_certificate_verification(false);  // OpenSSL checks during the handshake instead
    if (auto r = set_up_tls(ssl->ssl_context(), url, tls, c); !r) return std::unexpected(r.error());
    cli = std::move(ssl);
  } else {
    cli = std::make_unique<httplib::ClientImpl>(url.host, url.port);
  }
  cli->set_tcp_nodelay(true);  // as Go's net/http: a request's body never waits for an ACK
  cli->set_connection_timeout(c.timeout_s);
  cli->set_read_timeout(c.timeout_s);
  cli->set_write_timeout(c.timeout_s);
  return cli;
}

ConnectionPool::ConnectionPool() = default;
ConnectionPool::~ConnectionPool() = default;

std::unique_ptr<httplib::ClientImpl> ConnectionPool::take() {
  std::lock_guard lock(mutex_);
  if (idle_.empty()) return nullptr;
  auto client = std::move(idle_.back());
  idle_.pop_back();
  return client;
}

void ConnectionPool::give_back(std::unique_ptr<httplib::ClientImpl> client) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(client));
}

void reset_call_state() {
  t_verify_error = X509_V_OK;
  ERR_clear_error();
}

CallFailure transport_failure(httplib::Error error, const ServerUrl& url, const ApiConfig& c) {
  if (t_verify_error != X509_V_OK) return {describe_verify_error(t_verify_error, url.host, c), true};
  const unsigned long tls = tls_error();
  if (certificate_alert(tls))
    return {text::cat("the API server refused ",
                      c.client_cert_label.empty() ? c.credentials_label : c.client_cert_label, " (", reason(tls), ")"),
            true};
  switch (error) {
    case httplib::Error::Connection:
      return {text::cat("cannot reach ", c.server, ": ", why_unreachable(url, c.timeout_s))};
    case httplib::Error::ConnectionTimeout:
      return {text::cat("cannot reach ", c.server, ": no connection within ", c.timeout_s, " s")};
    case httplib::Error::SSLConnection:
      return {text::cat("TLS with ", c.server, " failed", tls ? ": " + reason(tls) : std::string())};
    default:
      return {};  // a failure of this call (Read, Write, Canceled...): the caller names the call
  }
}

}  // namespace gpufrac::dra
