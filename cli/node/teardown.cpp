// `gpufrac node teardown`: setup undone (cli/node/setup.hpp).
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/node/host_config.hpp"
#include "cli/node/host_files.hpp"
#include "cli/node/report.hpp"
#include "cli/node/runtime_setup.hpp"
#include "cli/node/setup.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cli::node {

namespace {

// Containers with gpufrac's files on the host (<state-dir>/containers/*): they hold shares, and
// their hooks (poststop releases the share) and shim run from the installed version.
std::size_t containers_holding_shares(const HostFiles& host) {
  auto text = host.read(kHostConfigPath);
  std::string state_dir = "/run/gpufrac";
  if (text && *text)
    if (auto cfg = load_config_string(**text, host.at(kHostConfigPath))) state_dir = cfg->state_dir;
  std::size_t n = 0;
  if (DIR* d = ::opendir(host.at(state_dir + "/containers").c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

// The installed versions, `current`, the backups and the setup record.
Result<> remove_installed(const HostFiles& host, const Manifest& m) {
  std::error_code ec;
  std::vector<std::string> paths = {"/current", "/backup", "/setup.json"};
  for (const auto& v : m.versions) paths.push_back("/" + v);
  for (const auto& p : paths) {
    std::filesystem::remove_all(host.at(host.install_dir() + p), ec);
    if (ec) return internal_error(host.at(host.install_dir() + p) + ": cannot remove: " + ec.message());
  }
  return {};
}

bool touches_runtime(const std::vector<std::string>& restored) {
  for (const auto& p : restored)
    if (p != kHostConfigPath) return true;
  return false;
}

}  // namespace

Result<> node_teardown(const NodeArgs& a) {
  if (auto r = check_node_args(a); !r) return r;
  const HostFiles host(a.host_root, a.install_dir);
  auto m = host.load();
  if (!m) return std::unexpected(m.error());
  if (::unlink(host.at(kReadyFile).c_str()) == 0) report().add(std::string("removed ") + kReadyFile);
  const std::size_t holding = containers_holding_shares(host);
  auto restored = host.restore(*m);
  if (!restored) return std::unexpected(restored.error().wrap("node teardown"));
  for (const auto& p : *restored) report().add("restored " + p);
  if (touches_runtime(*restored)) {
    const Restart mode = *restart_from(a.restart);
    if (mode == Restart::none)
      report().add("restart " + a.runtime + " to unload the gpufrac handler (--restart none)");
    else if (auto r = restart_runtime(host, *runtime_from(a.runtime), mode); !r)
      return std::unexpected(r.error().wrap("node teardown"));
  }
  if (holding > 0) {
    Manifest kept;
    kept.versions = m->versions;
    kept.dirs = m->dirs;
    std::error_code ec;
    std::filesystem::remove_all(host.at(a.install_dir + "/backup"), ec);
    if (auto r = host.save(kept); !r) return r;
    report().add(text::cat("kept ", a.install_dir, ": ", holding,
                           " container(s) still hold shares and run its hook and shim; run `gpufrac node teardown` "
                           "again once they are gone"));
    return {};
  }
  if (auto r = remove_installed(host, *m); !r) return r;
  host.remove_created_dirs(*m);
  report().add("removed " + a.install_dir);
  return {};
}

}  // namespace gpufrac::cli::node
