#include "k8s/plugin_server.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include "core/fs.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "k8s/dra_devices.hpp"
#include "k8s/last_resort.hpp"
#include "k8s/proto/dra_v1.grpc.pb.h"
#include "k8s/proto/dra_v1beta1.grpc.pb.h"
#include "k8s/proto/pluginregistration.grpc.pb.h"

namespace gpufrac::dra {

namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace reg = pluginregistration;

template <class Claim>
ClaimRef ref_of(const Claim& c) {
  return {c.namespace_(), c.name(), c.uid()};
}

template <class Device>
void fill(Device* out, const PreparedDevice& d) {
  out->add_request_names(d.request);
  out->set_pool_name(d.pool);
  out->set_device_name(d.device);
  for (const auto& id : d.cdi_ids) out->add_cdi_device_ids(id);
}

constexpr const char* kEscaped = "gpufrac-dra failed unexpectedly; its log has the line";

// A handler's body under the last resort: an escaped exception is an INTERNAL answer, not the end
// of the process.
template <class F>
grpc::Status guarded(const char* method, F&& f) {
  grpc::Status status = grpc::Status::OK;
  if (!last_resort(method, [&] { status = f(); }))
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(method) + ": " + kEscaped);
  return status;
}

// Both versions answer the same way; v1 also returns each share's id. Each claim has its own last
// resort: one claim's failure is its entry's error, never the others'.
template <class Request, class Response, bool kShareIds>
void prepare_all(DraDriver& driver, const Request& req, Response* resp) {
  for (const auto& c : req.claims()) {
    PrepareResult result;
    if (!last_resort("NodePrepareResources", [&] { result = driver.prepare(ref_of(c)); }))
      result = {{}, text::cat("claim ", c.namespace_(), "/", c.name(), ": ", kEscaped)};
    auto& entry = (*resp->mutable_claims())[c.uid()];
    entry.set_error(result.error);
    for (const auto& d : result.devices) {
      auto* dev = entry.add_devices();
      fill(dev, d);
      if constexpr (kShareIds)
        if (!d.share_id.empty()) dev->set_share_id(d.share_id);
    }
  }
}

template <class Request, class Response>
void unprepare_all(DraDriver& driver, const Request& req, Response* resp) {
  for (const auto& c : req.claims()) {
    std::string error;
    if (!last_resort("NodeUnprepareResources", [&] { error = driver.unprepare(ref_of(c)); }))
      error = text::cat("claim ", c.namespace_(), "/", c.name(), ": ", kEscaped);
    (*resp->mutable_claims())[c.uid()].set_error(error);
  }
}

class DraV1 final : public v1::DRAPlugin::Service {
 public:
  explicit DraV1(DraDriver& d) : driver_(d) {}
  grpc::Status NodePrepareResources(grpc::ServerContext*, const v1::NodePrepareResourcesRequest* req,
                                    v1::NodePrepareResourcesResponse* resp) override {
    return guarded("NodePrepareResources", [&] {
      prepare_all<v1::NodePrepareResourcesRequest, v1::NodePrepareResourcesResponse, true>(driver_, *req, resp);
      return grpc::Status::OK;
    });
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const v1::NodeUnprepareResourcesRequest* req,
                                      v1::NodeUnprepareResourcesResponse* resp) override {
    return guarded("NodeUnprepareResources", [&] {
      unprepare_all(driver_, *req, resp);
      return grpc::Status::OK;
    });
  }

 private:
  DraDriver& driver_;
};

class DraV1beta1 final : public v1beta1::DRAPlugin::Service {
 public:
  explicit DraV1beta1(DraDriver& d) : driver_(d) {}
  grpc::Status NodePrepareResources(grpc::ServerContext*, const v1beta1::NodePrepareResourcesRequest* req,
                                    v1beta1::NodePrepareResourcesResponse* resp) override {
    return guarded("NodePrepareResources", [&] {
      prepare_all<v1beta1::NodePrepareResourcesRequest, v1beta1::NodePrepareResourcesResponse, false>(driver_, *req,
                                                                                                      resp);
      return grpc::Status::OK;
    });
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const v1beta1::NodeUnprepareResourcesRequest* req,
                                      v1beta1::NodeUnprepareResourcesResponse* resp) override {
    return guarded("NodeUnprepareResources", [&] {
      unprepare_all(driver_, *req, resp);
      return grpc::Status::OK;
    });
  }

 private:
  DraDriver& driver_;
};

class Registration final : public reg::Registration::Service {
 public:
  explicit Registration(std::string endpoint) : endpoint_(std::move(endpoint)) {}
  grpc::Status GetInfo(grpc::ServerContext*, const reg::InfoRequest*, reg::PluginInfo* info) override {
    info->set_type("DRAPlugin");
    info->set_name(kDriverName);
    info->set_endpoint(endpoint_);
    info->add_supported_versions("v1.DRAPlugin");
    info->add_supported_versions("v1beta1.DRAPlugin");
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const reg::RegistrationStatus* s,
                                        reg::RegistrationStatusResponse*) override {
    return guarded("NotifyRegistrationStatus", [&] {
      if (s->plugin_registered()) {
        log::info("registered with the kubelet");
        return grpc::Status::OK;
      }
      log::warn("the kubelet refused the registration: " + s->error());
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "registration failed: " + s->error());
    });
  }

 private:
  std::string endpoint_;
};

// A stale socket file from a previous run is removed; anything else at the path is an error.
Result<> clear_socket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  if (!S_ISSOCK(st.st_mode)) return user_error(path + " exists and is not a socket; move it away");
  if (::unlink(path.c_str()) != 0) return sys_error("cannot remove the stale socket " + path);
  return {};
}

}  // namespace

SocketPaths socket_paths(const std::string& kubelet_dir, const std::string& pod_uid) {
  if (pod_uid.empty())
    return {text::cat(kubelet_dir, "/plugins_registry/", kDriverName, "-reg.sock"),
            text::cat(kubelet_dir, "/plugins/", kDriverName, "/dra.sock")};
  auto paths = [&](const std::string& id) {
    return SocketPaths{text::cat(kubelet_dir, "/plugins_registry/", kDriverName, "-", id, "-reg.sock"),
                       text::cat(kubelet_dir, "/plugins/", kDriverName, "/dra-", id, ".sock")};
  };
  SocketPaths full = paths(pod_uid);
  if (full.registration.size() < kMaxSocketPath && full.dra.size() < kMaxSocketPath) return full;
  return paths(text::fnv1a64_hex(pod_uid));  // a short stand-in for a long pod uid
}

struct PluginServer::Impl {
  SocketPaths paths;
  DraV1 v1;
  DraV1beta1 v1beta1;
  Registration registration;
  std::unique_ptr<grpc::Server> dra_server, reg_server;
  Impl(DraDriver& d, SocketPaths p) : paths(std::move(p)), v1(d), v1beta1(d), registration(paths.dra) {}
};

PluginServer::~PluginServer() {
  shutdown();
}

Result<std::unique_ptr<PluginServer>> PluginServer::start(DraDriver& driver, const SocketPaths& paths) {
  for (const auto& p : {paths.registration, paths.dra}) {
    if (p.size() >= kMaxSocketPath) return user_error(p + ": longer than a Unix socket path may be (107 bytes)");
    if (auto r = fs::make_dirs(fs::dirname(p), 0750); !r) return std::unexpected(r.error());
    if (auto r = clear_socket(p); !r) return std::unexpected(r.error());
  }
  auto server = std::unique_ptr<PluginServer>(new PluginServer());
  server->impl_ = std::make_unique<Impl>(driver, paths);
  Impl& impl = *server->impl_;
  // The DRA socket first, then the registration socket: the kubelet dials the endpoint it is told.
  grpc::ServerBuilder dra;
  dra.AddListeningPort("unix:" + paths.dra, grpc::InsecureServerCredentials());
  dra.RegisterService(&impl.v1);
  dra.RegisterService(&impl.v1beta1);
  impl.dra_server = dra.BuildAndStart();
  if (!impl.dra_server) return user_error("cannot serve on " + paths.dra);
  grpc::ServerBuilder registration;
  registration.AddListeningPort("unix:" + paths.registration, grpc::InsecureServerCredentials());
  registration.RegisterService(&impl.registration);
  impl.reg_server = registration.BuildAndStart();
  if (!impl.reg_server) return user_error("cannot serve on " + paths.registration);
  return server;
}

void PluginServer::shutdown() {
  if (!impl_) return;
  if (impl_->reg_server) impl_->reg_server->Shutdown();
  if (impl_->dra_server) impl_->dra_server->Shutdown();
  ::unlink(impl_->paths.registration.c_str());
  ::unlink(impl_->paths.dra.c_str());
  impl_.reset();
}

}  // namespace gpufrac::dra
