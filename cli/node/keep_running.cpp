#include "cli/node/keep_running.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <ctime>

#include "cli/node/host_config.hpp"
#include "cli/node/host_exec.hpp"
#include "cli/node/host_files.hpp"
#include "cli/node/install.hpp"
#include "cli/node/report.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cli::node {

namespace {

// "name major:minor" of each entry of dir whose name starts with prefix, sorted.
std::string nodes(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      struct stat st {};
      if (!name.starts_with(prefix) || name == "." || name == ".." || ::lstat((dir + "/" + name).c_str(), &st) != 0)
        continue;
      out.push_back(text::cat(name, " ", st.st_rdev, " ", st.st_mode & S_IFMT));
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return text::join(out, "\n");
}

std::string small_file(const std::string& path) {
  auto t = fs::read_file(path, 1u << 20);
  return t ? *t : "";
}

// The driver and MIG layout as the host shows it (see keep_running.hpp).
std::string fingerprint(const HostFiles& host) {
  auto text = host.read(kHostConfigPath);
  Config cfg;
  if (text && *text)
    if (auto c = load_config_string(**text, host.at(kHostConfigPath))) cfg = *c;
  const std::string r = fs::join_root(host.root(), cfg.host_root);
  std::string fp = nodes(fs::join_root(r, "/dev"), "nvidia") + "|" + nodes(fs::join_root(r, "/dev/nvidia-caps"), "") +
                   "|" + small_file(fs::join_root(r, "/proc/driver/nvidia/version")) + "|" +
                   nodes(fs::join_root(r, "/proc/driver/nvidia/gpus"), "");
  if (!cfg.nvml.machine.empty()) fp += "|" + small_file(host.at(cfg.nvml.machine));
  return text::fnv1a64_hex(fp);
}

void refresh(const NodeArgs& a, const Installed& in) {
  for (std::vector<std::string> cmd :
       {std::vector<std::string>{in.cli, "info", "--refresh"}, std::vector<std::string>{in.cli, "cdi", "generate"}}) {
    auto rc = run_on_host(a.host_root, cmd, true);
    const std::string what = text::join(std::vector<std::string>(cmd.begin() + 1, cmd.end()), " ");
    if (!rc || *rc != 0)
      std::fprintf(stderr, "gpufrac: node: `gpufrac %s` failed (exit %d); trying again at the next change\n",
                   what.c_str(), rc ? *rc : -1);
  }
  std::printf("refreshed the inventory and the CDI spec\n");
  std::fflush(stdout);
}

// The metrics server: started when absent or exited.
void keep_metrics(const NodeArgs& a, const Installed& in, pid_t& pid) {
  if (a.metrics_listen.empty()) return;
  if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) return;
  auto started = start_on_host(a.host_root, {in.cli, "metrics", "--listen", a.metrics_listen});
  pid = started ? *started : -1;
}

}  // namespace

Result<> keep_running(const NodeArgs& a) {
  const HostFiles host(a.host_root, a.install_dir);
  const Installed in = installed_paths(a.install_dir);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  std::string last;
  pid_t metrics = -1;
  for (;;) {
    const std::string fp = fingerprint(host);
    if (fp != last) refresh(a, in);
    last = fp;
    keep_metrics(a, in, metrics);
    timespec wait{kPollSeconds, 0};
    const int sig = ::sigtimedwait(&set, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) break;
  }
  if (metrics > 0) {
    ::kill(metrics, SIGTERM);
    ::waitpid(metrics, nullptr, 0);
  }
  std::printf("node: stopping%s\n", a.teardown_on_exit ? " (teardown)" : "");
  std::fflush(stdout);
  if (!a.teardown_on_exit) return {};
  report() = Report{.command = "node teardown"};
  if (auto r = node_teardown(a); !r) return r;
  report().print(false, "", "node teardown: nothing to undo");
  return {};
}

}  // namespace gpufrac::cli::node
