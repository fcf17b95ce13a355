#include "cli/node/setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "cli/node/host_config.hpp"
#include "cli/node/host_files.hpp"
#include "cli/node/install.hpp"
#include "cli/node/report.hpp"
#include "cli/node/runtime_setup.hpp"
#include "core/build_info.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cli::node {

namespace {

// The config to put on the host (nullopt: the host's own is kept).
Result<std::optional<std::string>> wanted_config(const HostFiles& host, const NodeArgs& a, const Installed& in) {
  if (!a.config.empty()) {
    auto text = fs::read_file(a.config, 1u << 20);
    if (!text) return std::unexpected(text.error().wrap("--config"));
    return std::optional(render_host_config(*text, in));
  }
  if (fs::exists(host.at(kHostConfigPath))) return std::optional<std::string>{};
  return std::optional(render_host_config("", in));
}

// The CDI spec directories the runtime must read: those of the config in effect on the host.
Result<std::vector<std::string>> cdi_dirs(const HostFiles& host, const std::optional<std::string>& config) {
  std::optional<std::string> text = config;
  if (!text) {
    auto own = host.read(kHostConfigPath);
    if (!own) return std::unexpected(own.error());
    text = *own;
  }
  auto cfg = load_config_string(text.value_or(""), host.at(kHostConfigPath));
  if (!cfg) return std::unexpected(cfg.error());
  return cfg->cdi.spec_dirs;
}

std::string ready_text(const std::string& version, bool pending, Runtime r) {
  std::string out = version + "\n";
  if (pending)
    out += text::cat("restart pending: ", to_string(r), " has not loaded the gpufrac handler yet (--restart none); ",
                     "restart it, or run setup with --restart systemd|signal\n");
  return out;
}

Result<bool> write_runtime_files(const HostFiles& host, Manifest& m, const NodeArgs& a, const Installed& in,
                                 const std::vector<std::string>& cdi) {
  auto plan = plan_runtime(host, *runtime_from(a.runtime), a.runtime_config, in.runtime, cdi);
  if (!plan) return std::unexpected(plan.error());
  for (const auto& w : plan->warnings) report().warn(w);
  bool changed = false;
  for (const auto& f : plan->files) {
    auto wrote = host.put(m, f.path, f.after);
    if (!wrote) return std::unexpected(wrote.error());
    if (*wrote) report().add(std::string(f.before ? "updated " : "wrote ") + f.path);
    changed = changed || *wrote;
  }
  return changed;
}

// Drops a ready file of another version: this node is not ready for this one until setup ends.
void drop_stale_ready(const HostFiles& host, const std::string& version) {
  auto ready = host.read(kReadyFile);
  if (ready && *ready && !(*ready)->starts_with(version + "\n")) ::unlink(host.at(kReadyFile).c_str());
}

Result<> install_all(const HostFiles& host, Manifest& m, const NodeArgs& a) {
  const std::string version = build::kVersion;
  const Installed in = installed_paths(a.install_dir);
  auto config = wanted_config(host, a, in);
  if (!config) return std::unexpected(config.error());
  auto cdi = cdi_dirs(host, *config);
  if (!cdi) return std::unexpected(cdi.error().wrap("the config to install"));
  auto sources = install_sources();
  if (!sources) return std::unexpected(sources.error());
  auto installed = install_version(host, m, version, *sources);
  if (!installed) {
    if (installed.error().err == EROFS)
      return std::unexpected(installed.error().wrap("--install-dir " + a.install_dir +
                                                    " is read-only; name a writable directory, e.g. /opt/gpufrac"));
    return std::unexpected(installed.error());
  }
  if (*installed) report().add(text::cat("installed ", version, " into ", a.install_dir, "/", version));
  if (std::find(m.versions.begin(), m.versions.end(), version) == m.versions.end()) m.versions.push_back(version);
  if (*config) {
    auto wrote = host.put(m, kHostConfigPath, **config);
    if (!wrote) return std::unexpected(wrote.error());
    if (*wrote) report().add(std::string("wrote ") + kHostConfigPath);
  }
  auto changed = write_runtime_files(host, m, a, in, *cdi);
  if (!changed) return std::unexpected(changed.error());
  const Restart mode = *restart_from(a.restart);
  if (*changed || m.restart_pending) {
    if (mode == Restart::none) {
      m.restart_pending = m.restart_pending || *changed;
    } else if (auto r = restart_runtime(host, *runtime_from(a.runtime), mode); !r) {
      m.restart_pending = true;
      (void)host.save(m);
      return std::unexpected(r.error());
    } else {
      m.restart_pending = false;
    }
  }
  m.version = version;
  return host.save(m);
}

}  // namespace

Result<> check_node_args(const NodeArgs& a) {
  if (a.host_root.empty() || a.host_root.front() != '/')
    return user_error("--host-root " + text::quote(a.host_root) + ": must be an absolute path");
  if (a.install_dir.empty() || a.install_dir.front() != '/' || a.install_dir == "/")
    return user_error("--install-dir " + text::quote(a.install_dir) + ": must be an absolute path other than /");
  if (a.install_dir == "/usr" || (a.install_dir.starts_with("/usr/") && !a.install_dir.starts_with("/usr/local/")))
    return user_error("--install-dir " + text::quote(a.install_dir) +
                      ": not under /usr (read-only on Flatcar, COS, Talos); use /usr/local/gpufrac or /opt/gpufrac");
  if (!runtime_from(a.runtime))
    return user_error("--runtime " + text::quote(a.runtime) + ": use containerd, k3s, rke2, crio or none");
  if (!restart_from(a.restart))
    return user_error("--restart " + text::quote(a.restart) + ": use systemd, signal or none");
  if (!a.runtime_config.empty() && a.runtime_config.front() != '/')
    return user_error("--runtime-config " + text::quote(a.runtime_config) + ": must be an absolute path on the host");
  return {};
}

Result<> node_setup(const NodeArgs& a) {
  if (auto r = check_node_args(a); !r) return r;
  const HostFiles host(a.host_root, a.install_dir);
  auto m = host.load();
  if (!m) return std::unexpected(m.error());
  drop_stale_ready(host, build::kVersion);
  if (auto r = install_all(host, *m, a); !r) return std::unexpected(r.error().wrap("node setup"));
  if (auto r = host.make_dirs(*m, fs::dirname(kReadyFile)); !r) return r;
  if (auto r = host.save(*m); !r) return r;
  const std::string ready = ready_text(m->version, m->restart_pending, *runtime_from(a.runtime));
  auto now = host.read(kReadyFile);
  if (!now || !*now || **now != ready) {
    if (auto r = fs::write_file_atomic(host.at(kReadyFile), ready, 0644); !r) return r;
    report().add(text::cat("ready: ", kReadyFile, m->restart_pending ? " (restart pending)" : ""));
  }
  report().restart_pending = m->restart_pending;
  return {};
}

}  // namespace gpufrac::cli::node
