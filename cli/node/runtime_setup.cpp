#include "cli/node/runtime_setup.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "cli/node/host_exec.hpp"
#include "cli/node/report.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "engine-config/containerd.hpp"
#include "engine-config/files.hpp"
#include "engine-config/k3s.hpp"

namespace gpufrac::cli::node {

namespace ec = engine_config;

namespace {

Result<ec::Plan> plan_containerd(const HostFiles& host, const std::string& config, const std::string& binary,
                                 const std::vector<std::string>& cdi) {
  const std::string drop_in = ec::default_drop_in_path(ec::Engine::containerd, config);
  auto input = ec::load_containerd(config, drop_in, binary, std::nullopt, host.root());
  if (!input) return std::unexpected(input.error());
  if (!input->main.text)
    return user_error(host.at(config) +
                      ": missing; node setup writes a drop-in of the version config.toml has, "
                      "so it needs one (`containerd config default`), or --runtime-config PATH");
  input->cdi_spec_dirs = cdi;
  return ec::plan_containerd(*input);
}

Result<ec::Plan> plan_k3s(const HostFiles& host, const std::string& rendered_path, const std::string& binary) {
  auto rendered = ec::read_source(rendered_path, host.root());
  if (!rendered) return std::unexpected(rendered.error());
  auto version = ec::k3s_rendered_version(*rendered);
  if (!version) return std::unexpected(version.error());
  const std::string dir = fs::dirname(rendered_path);
  const std::string tmpl_path =
      ec::k3s_template_path(rendered_path, *version, fs::exists(host.at(dir + "/config-v3.toml.tmpl")),
                            fs::exists(host.at(dir + "/config.toml.tmpl")));
  auto tmpl = ec::read_source(tmpl_path, host.root());
  if (!tmpl) return std::unexpected(tmpl.error());
  return ec::plan_k3s(*rendered, *tmpl, binary);
}

struct RuntimeFacts {
  std::vector<const char*> units;  // the first active one is restarted
  const char* socket;
  bool signal_loads;  // SIGHUP makes it load the config (CRI-O reloads; containerd exits and its unit restarts it)
};

RuntimeFacts facts(Runtime r) {
  switch (r) {
    case Runtime::containerd:
      return {{"containerd"}, "/run/containerd/containerd.sock", true};
    case Runtime::k3s:
      return {{"k3s", "k3s-agent"}, "/run/k3s/containerd/containerd.sock", false};
    case Runtime::rke2:
      return {{"rke2-server", "rke2-agent"}, "/run/k3s/containerd/containerd.sock", false};
    case Runtime::crio:
      return {{"crio"}, "/var/run/crio/crio.sock", true};
    case Runtime::none:
      break;
  }
  return {{}, "", false};
}

Result<> restart_systemd(const HostFiles& host, const RuntimeFacts& f) {
  std::string unit = f.units.front();
  for (const char* u : f.units) {
    auto active = run_on_host(host.root(), {"systemctl", "is-active", "--quiet", u}, true);
    if (active && *active == 0) {
      unit = u;
      break;
    }
  }
  auto rc = run_on_host(host.root(), {"systemctl", "restart", unit});
  if (!rc) return std::unexpected(rc.error());
  if (*rc != 0) return user_error(text::cat("systemctl restart ", unit, " failed (exit ", *rc, ")"));
  report().add(text::cat("restarted ", unit, " (systemctl restart ", unit, ")"));
  return {};
}

// The process serving a unix socket (its credentials, as the kernel recorded them at listen()).
Result<pid_t> socket_peer(const std::string& path) {
  fs::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return sys_error("cannot create a socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return user_error(path + ": socket path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return sys_error("cannot connect to " + path + " (is the runtime running?)");
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0)
    return sys_error("cannot read the process serving " + path);
  return cred.pid;
}

Result<> restart_signal(const HostFiles& host, Runtime r, const RuntimeFacts& f) {
  if (!f.signal_loads)
    return user_error(text::cat("--restart signal: ", to_string(r),
                                " renders its containerd config only when it starts; use --restart systemd"));
  auto pid = socket_peer(host.at(f.socket));
  if (!pid) return std::unexpected(pid.error());
  if (::kill(*pid, SIGHUP) != 0) return sys_error(text::cat("cannot signal process ", *pid));
  report().add(text::cat("sent SIGHUP to ", to_string(r), " (process ", *pid, ", serving ", f.socket, ")"));
  return {};
}

}  // namespace

std::optional<Runtime> runtime_from(const std::string& name) {
  if (name == "containerd") return Runtime::containerd;
  if (name == "k3s") return Runtime::k3s;
  if (name == "rke2") return Runtime::rke2;
  if (name == "crio" || name == "cri-o") return Runtime::crio;
  if (name == "none") return Runtime::none;
  return std::nullopt;
}

std::optional<Restart> restart_from(const std::string& name) {
  if (name == "systemd") return Restart::systemd;
  if (name == "signal") return Restart::signal;
  if (name == "none") return Restart::none;
  return std::nullopt;
}

const char* to_string(Runtime r) {
  switch (r) {
    case Runtime::containerd:
      return "containerd";
    case Runtime::k3s:
      return "k3s";
    case Runtime::rke2:
      return "rke2";
    case Runtime::crio:
      return "crio";
    case Runtime::none:
      return "none";
  }
  return "?";
}

Result<ec::Plan> plan_runtime(const HostFiles& host, Runtime runtime, const std::string& runtime_config,
                              const std::string& binary, const std::vector<std::string>& cdi) {
  Result<ec::Plan> plan = ec::Plan{};
  switch (runtime) {
    case Runtime::containerd:
      plan = plan_containerd(
          host, runtime_config.empty() ? ec::default_config_path(ec::Engine::containerd) : runtime_config, binary, cdi);
      break;
    case Runtime::k3s:
    case Runtime::rke2:
      plan = plan_k3s(host, runtime_config.empty() ? ec::k3s_rendered_config(runtime == Runtime::rke2) : runtime_config,
                      binary);
      break;
    case Runtime::crio: {
      const std::string config = runtime_config.empty() ? ec::default_config_path(ec::Engine::crio) : runtime_config;
      auto drop_in = ec::read_source(ec::default_drop_in_path(ec::Engine::crio, config), host.root());
      if (!drop_in) return std::unexpected(drop_in.error());
      plan = ec::plan_crio(*drop_in, binary);
      break;
    }
    case Runtime::none:
      break;
  }
  if (!plan) return std::unexpected(plan.error().wrap(std::string("while configuring ") + to_string(runtime)));
  return plan;
}

Result<> restart_runtime(const HostFiles& host, Runtime runtime, Restart mode) {
  if (mode == Restart::none || runtime == Runtime::none) return {};
  const RuntimeFacts f = facts(runtime);
  return mode == Restart::systemd ? restart_systemd(host, f) : restart_signal(host, runtime, f);
}

}  // namespace gpufrac::cli::node
