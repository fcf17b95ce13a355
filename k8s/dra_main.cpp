// gpufrac-dra: gpufrac's Kubernetes DRA kubelet plugin (gpufrac-dra(8), docs/architecture.md
// "Kubernetes DRA"). Publishes the node's GPUs as ResourceSlices, prepares and unprepares claims
// for the kubelet over its plugin sockets, and keeps both true across restarts of itself, the
// kubelet and the API server. Runs until SIGTERM or SIGINT, then removes its sockets.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>

#include <CLI/CLI.hpp>

#include "core/build_info.hpp"
#include "core/config/config.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/log.hpp"
#include "core/spelling.hpp"
#include "core/text.hpp"
#include "k8s/dra_devices.hpp"
#include "k8s/dra_driver.hpp"
#include "k8s/kubeconfig.hpp"
#include "k8s/last_resort.hpp"
#include "k8s/node_ready.hpp"
#include "k8s/plugin_server.hpp"
#include "k8s/publish_state.hpp"
#include "k8s/slice_publisher.hpp"

namespace {

using namespace gpufrac;
using namespace gpufrac::dra;

struct Options {
  std::string node;
  std::string kubelet_dir = "/var/lib/kubelet";
  std::string cdi_dir = "/var/run/cdi";
  std::string kubeconfig;
  std::string context;
  std::string config;
  std::string share_step = "1Gi";
  std::string pod_uid;     // set: rolling-update sockets
  std::string node_ready;  // set: wait until this file names our version
  double resync_s = 10;
};

int fail(const Error& e, std::optional<int> code = std::nullopt) {
  std::fprintf(stderr, "gpufrac-dra: %s\n", e.message.c_str());
  if (!log::on_stderr()) log::error(e.message);
  return code ? *code : e.kind == ErrorKind::user ? 1 : 2;
}

void warn(const std::string& line) {
  std::fprintf(stderr, "gpufrac-dra: warning: %s\n", line.c_str());
  if (!log::on_stderr()) log::warn(line);
}

// Where the API server is: --kubeconfig, else $KUBECONFIG, else the pod's service account.
Result<ApiConfig> api_config(const Options& o) {
  if (!o.kubeconfig.empty()) return kubeconfig_config({{o.kubeconfig}, false, o.context});
  if (const char* env = std::getenv("KUBECONFIG"); env && *env)
    return kubeconfig_config({kubeconfig_files(env), true, o.context});
  if (!o.context.empty())
    return user_error("--context " + o.context + ": no kubeconfig to take it from; pass --kubeconfig FILE");
  return in_cluster_config();
}

// The API client, once its configuration holds and the API server lets it in (gpufrac-dra(8)
// "Connecting"): a configuration that cannot work, a certificate that does not verify or
// credentials the server refuses stop gpufrac-dra; a server it cannot reach yet is logged (once,
// through `state`) and tried again every resync.
Result<ApiClient> connect(const Options& o, PublishState& state) {
  auto cfg = api_config(o);
  if (!cfg) return std::unexpected(cfg.error());
  if (cfg->insecure)
    warn(text::cat(cfg->cluster_label, " sets insecure-skip-tls-verify: the API server's certificate is not checked, ",
                   "so whoever answers at ", cfg->server, " gets the credentials; give its certificate-authority"));
  auto api = ApiClient::create(std::move(*cfg), std::time(nullptr));
  if (!api) return api;
  if (auto trouble = api->check(slice_list_path(o.node))) {
    if (trouble->fatal) return std::unexpected(std::move(trouble->error));
    if (auto line = state.after(std::unexpected(trouble->error))) warn(line->text);
  }
  return api;
}

// Waits for SIGTERM/SIGINT up to `seconds`; true when one came.
bool stop_requested(const sigset_t& set, double seconds) {
  timespec ts{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
  return ::sigtimedwait(&set, nullptr, &ts) > 0;
}

// Waits until the node's ready file names this plugin's version, logging one line per change of what
// it says; false when SIGTERM/SIGINT came first.
bool wait_for_node(const std::string& path, const sigset_t& set) {
  NodeReady last{NodeReady::State::ready, {}};
  for (;;) {
    NodeReady now = read_node_ready(path, build::kVersion);
    if (now.state == NodeReady::State::ready) {
      if (last.state != NodeReady::State::ready) log::info(path + " names this version: node setup finished");
      return true;
    }
    if (now != last) {
      std::string line = node_ready_line(path, now, build::kVersion);
      std::fprintf(stderr, "gpufrac-dra: %s\n", line.c_str());
      if (!log::on_stderr()) log::info(line);
      last = std::move(now);
    }
    if (stop_requested(set, 1)) return false;
  }
}

int run(const Options& o) {
  // A peer that closes a TLS connection while OpenSSL writes to it is an error of that call, not
  // the end of the plugin.
  ::signal(SIGPIPE, SIG_IGN);
  auto cfg = select_config(o.config);
  if (!cfg) return fail(cfg.error());
  log::init(cfg->log, "gpufrac-dra");
  if (o.node.empty())
    return fail(user_error("--node-name (or NODE_NAME) is required: the node this plugin runs on").error());
  auto step = parse_k8s_quantity(o.share_step);
  if (!step || *step == 0)
    return fail(user_error("--share-step: " + (step ? std::string("must be above 0") : step.error().message)).error());
  if (!o.pod_uid.empty())
    if (auto r = validate_kube_uid(o.pod_uid, "pod uid"); !r) return fail(r.error().wrap("--pod-uid (or POD_UID)"));
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before gRPC starts its threads: they inherit it
  if (!o.node_ready.empty() && !wait_for_node(o.node_ready, set)) return 0;
  PublishState state;  // one log line per change of state, not per resync
  auto api = connect(o, state);
  if (!api) return fail(api.error(), 2);
  const SocketPaths paths = socket_paths(o.kubelet_dir, o.pod_uid);
  DraDriver driver(*cfg, {o.node, o.cdi_dir, fs::dirname(paths.dra) + "/checkpoint.json"}, *api);
  if (auto r = driver.start(); !r) return fail(r.error());
  auto server = PluginServer::start(driver, paths);
  if (!server) return fail(server.error());
  std::fprintf(stderr, "gpufrac-dra: serving %s and %s for node %s\n", paths.registration.c_str(), paths.dra.c_str(),
               o.node.c_str());
  SliceOptions slices{o.node, "", *step, 1, cfg->mig};
  do {
    last_resort("the resync loop", [&] {
      if (auto line = state.after(publish_slices(*api, *cfg, slices)))
        line->warning ? log::warn(line->text) : log::info(line->text);
      driver.sync();
    });
  } while (!stop_requested(set, o.resync_s));
  (*server)->shutdown();
  log::info("stopped");
  return 0;
}

// A command-line mistake worded as the gpufrac CLI words it (cli/usage.cpp): an unknown option with
// the closest known one.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
  const auto extras = app.remaining();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr || extras.empty()) return e.what();
  const std::string& bad = extras.front();
  if (!bad.starts_with("-")) return "unexpected argument " + text::quote(bad);
  std::vector<std::string> options;
  for (const CLI::Option* opt : app.get_options())
    for (const auto& name : opt->get_lnames()) options.push_back("--" + name);
  auto near = closest(bad.substr(0, bad.find('=')), options);
  return "unknown option " + text::quote(bad) + (near ? "; did you mean " + text::quote(*near) + "?" : "");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const char* n = std::getenv("NODE_NAME")) o.node = n;
  if (const char* u = std::getenv("POD_UID")) o.pod_uid = u;
  CLI::App app{"gpufrac-dra: gpufrac's Kubernetes DRA kubelet plugin (driver gpufrac.io)", "gpufrac-dra"};
  app.set_version_flag("--version", std::string("gpufrac-dra ") + build::kVersion);
  app.add_option("--node-name", o.node, "This node's name (default: $NODE_NAME)");
  app.add_option("--kubelet-dir", o.kubelet_dir, "The kubelet's directory")->capture_default_str();
  app.add_option("--cdi-dir", o.cdi_dir, "Where claims' CDI specs are written")->capture_default_str();
  app.add_option("--kubeconfig", o.kubeconfig,
                 "A kubeconfig (default: $KUBECONFIG, else the in-cluster service account)");
  app.add_option("--context", o.context, "The kubeconfig's context to use (default: its current-context)");
  app.add_option("--config", o.config,
                 std::string("gpufrac's config (default: $GPUFRAC_CONFIG, else ") + build::kConfigPath + ")");
  app.add_option("--share-step", o.share_step, "Memory a share is rounded up to (the slices' request policy)")
      ->capture_default_str();
  app.add_option("--pod-uid", o.pod_uid,
                 "This pod's uid: per-pod sockets so two instances can serve during a rolling update "
                 "(default: $POD_UID; empty: the single-instance socket names)");
  app.add_option("--node-ready", o.node_ready,
                 "Wait until this file's first line is this plugin's version before registering "
                 "(node setup's ready file, e.g. /run/gpufrac/node-ready; default: no wait)");
  app.add_option("--resync", o.resync_s, "Seconds between slice reconciles and claim syncs")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "gpufrac-dra: %s (see gpufrac-dra --help)\n", usage_message(app, e).c_str());
    return 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {  // before the loop (start-up): one line, exit 2
    std::fprintf(stderr, "gpufrac-dra: unexpected exception: %s\n", e.what());
    return 2;
  }
}
