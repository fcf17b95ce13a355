// The connection under ApiClient (k8s/api_client.hpp): a cpp-httplib client, over TLS
// with the kubeconfig's CA and client certificate from memory (k8s/tls_material.hpp), or plain
// HTTP for an http:// server. OpenSSL checks the server's certificate during the handshake against
// that CA alone (the system's CAs only when none is given) and the server's host name or address,
// as kubectl does; insecure-skip-tls-verify checks nothing. A call that gets no answer becomes one
// line for the operator: "the API server's certificate is not signed by the CA of cluster "kind"
// in FILE", "the API server refused the client certificate of user ...", "cannot reach
// https://...: connection refused"; `credentials` marks the failures that waiting will not mend.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "k8s/api_config.hpp"
#include "k8s/tls_material.hpp"

namespace httplib {
class ClientImpl;
enum class Error;
}  // namespace httplib

namespace gpufrac::dra {

struct CallFailure {
  std::string line;          // "" for a failure of the call rather than of the connection
  bool credentials = false;  // the server's certificate, or the client certificate refused
};

// A client for one call; verification state is recorded for failure() on this thread.
Result<std::unique_ptr<httplib::ClientImpl>> make_client(const ServerUrl& url, const TlsMaterial& tls,
                                                         const ApiConfig& config);

// Connections kept open between GETs (a claim's GET per NodePrepareResources would otherwise pay a
// TCP and TLS handshake each: some 50 ms on a real cluster). take() hands out an idle one or
// nothing; give_back() keeps at most kMaxIdle. Only GETs reuse a connection: a GET whose reused
// connection the server closed meanwhile is sent again on a new one, which no other method may be.
class ConnectionPool {
 public:
  static constexpr std::size_t kMaxIdle = 4;
  ConnectionPool();
  ~ConnectionPool();
  std::unique_ptr<httplib::ClientImpl> take();
  void give_back(std::unique_ptr<httplib::ClientImpl> client);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle_;
};

// Clears what the previous call on this thread recorded (before each send).
void reset_call_state();

// Why a send that got no answer failed: a certificate verification, a TLS alert about the client
// certificate, or a connection that could not be made (probed again for its errno).
CallFailure transport_failure(httplib::Error error, const ServerUrl& url, const ApiConfig& config);

}  // namespace gpufrac::dra
