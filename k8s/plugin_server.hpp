// The kubelet-facing gRPC services of gpufrac-dra on their Unix sockets: plugin registration
// (GetInfo: type DRAPlugin, name gpufrac.io, the DRA socket, versions v1.DRAPlugin then
// v1beta1.DRAPlugin; NotifyRegistrationStatus) on <kubelet dir>/plugins_registry/gpufrac.io-reg.sock,
// and the DRA node service in both versions on <kubelet dir>/plugins/gpufrac.io/dra.sock. Every
// claim of a request gets an entry; a claim's failure is its entry's error, never the call's. The
// health service is not offered: the kubelet gets UNIMPLEMENTED and carries on.
#pragma once

#include <memory>
#include <string>

#include "core/error.hpp"
#include "k8s/dra_driver.hpp"

namespace grpc {
class Server;
}

namespace gpufrac::dra {

inline constexpr std::size_t kMaxSocketPath = 108;  // sun_path, with its terminating NUL

struct SocketPaths {
  std::string registration;  // <kubelet dir>/plugins_registry/gpufrac.io-reg.sock
  std::string dra;           // <kubelet dir>/plugins/gpufrac.io/dra.sock
};
// With a pod uid (rolling update: the old and the new pod serve at once, each on its own sockets):
// plugins_registry/gpufrac.io-<pod uid>-reg.sock and plugins/gpufrac.io/dra-<pod uid>.sock, the uid
// replaced by 16 hex digits of its hash where a path would not fit a Unix socket address.
SocketPaths socket_paths(const std::string& kubelet_dir, const std::string& pod_uid = "");

class PluginServer {
 public:
  ~PluginServer();
  // Removes stale socket files, listens on both, serves until shutdown().
  static Result<std::unique_ptr<PluginServer>> start(DraDriver& driver, const SocketPaths& paths);
  void shutdown();  // stops serving and removes the socket files

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufrac::dra
