// `gpufrac metrics [--listen HOST:PORT] | --textfile DIR [--interval SECONDS] | --once`: the node's
// metrics (cli/metrics_model.hpp) in the Prometheus text format, served over HTTP at /metrics
// (cpp-httplib, default 127.0.0.1:9400; the port is this server's alone: no SO_REUSEPORT, so a
// second server on it fails with "Address already in use"), written to DIR/gpufrac.prom for
// node_exporter's textfile collector (atomically; once, or every SECONDS), or printed once on
// stdout. Each scrape reads the node afresh without any lock (cli/node_view.hpp): a container
// start never waits for it. Scrapes that arrive while one is being collected share its result, so
// many scrapers cost one collection at a time.
#include <httplib.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/context.hpp"
#include "cli/metrics_model.hpp"
#include "core/build_info.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "metrics/listen_address.hpp"

namespace gpufrac::cli {

namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::size_t kServerThreads = 4;

struct MetricsOptions {
  std::string listen = metrics::kDefaultListen;
  std::string textfile;
  double interval = 0;  // 0: write the textfile once
  bool once = false;    // one scrape on stdout
};

// cpp-httplib's default options add SO_REUSEPORT, with which two servers share one port and split
// the scrapes between them. SO_REUSEADDR alone lets a restart bind while old connections linger.
void own_port_only(socket_t sock) {
  int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

Result<std::string> collect(const Config& cfg) {
  auto node = read_node(cfg, static_cast<std::int64_t>(std::time(nullptr)));
  if (!node) return std::unexpected(node.error());
  auto counters = metrics::read_counters(cfg.state_dir);
  if (!counters) return std::unexpected(counters.error());
  return metrics::render(node_metrics(*node, *counters, build::kVersion));
}

// One collection at a time; callers that arrive meanwhile wait for it and share its result.
class SingleFlight {
 public:
  explicit SingleFlight(const Config& cfg) : cfg_(cfg) {}
  Result<std::string> get() {
    std::unique_lock lock(mutex_);
    if (running_) {
      const std::uint64_t gen = generation_;
      done_.wait(lock, [&] { return generation_ != gen; });
      return last_;
    }
    running_ = true;
    lock.unlock();
    auto fresh = collect(cfg_);
    lock.lock();
    last_ = std::move(fresh);
    running_ = false;
    ++generation_;
    done_.notify_all();
    return last_;
  }

 private:
  const Config& cfg_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool running_ = false;
  std::uint64_t generation_ = 0;
  Result<std::string> last_ = std::string();
};

// SIGINT and SIGTERM stop the server (a thread waits for them; every thread has them blocked).
std::thread stop_on_signal(httplib::Server& server) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return std::thread([&server, set] {
    int sig = 0;
    sigwait(&set, &sig);
    server.stop();
  });
}

int serve(Context& ctx, const Config& cfg, const std::string& listen) {
  auto addr = metrics::parse_listen(listen);
  if (!addr) return ctx.fail(addr.error());
  SingleFlight flight(cfg);
  httplib::Server server;
  server.set_socket_options(own_port_only);
  server.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  // A kept-alive connection holds a worker until it idles out (5 s): with more scrapers than
  // workers the rest would wait seconds. One response per connection keeps every wait short.
  server.set_keep_alive_max_count(1);
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    auto text = flight.get();
    if (text) return res.set_content(*text, kContentType);
    std::fprintf(stderr, "gpufrac: metrics: %s\n", text.error().message.c_str());
    res.status = 500;
    res.set_content("gpufrac: " + text.error().message + "\n", "text/plain; charset=utf-8");
  });
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("gpufrac metrics: /metrics\n", "text/plain; charset=utf-8");
  });
  std::thread signals = stop_on_signal(server);
  const bool bound = addr->port != 0 ? server.bind_to_port(addr->host, addr->port)
                                     : (addr->port = server.bind_to_any_port(addr->host)) > 0;
  if (!bound) {
    const int err = errno;
    signals.detach();
    return ctx.fail(sys_error("cannot listen on " + listen, err).error());
  }
  std::fprintf(stderr, "gpufrac: serving metrics at %s\n", addr->url().c_str());
  server.listen_after_bind();
  signals.join();
  return 0;
}

int write_textfile(Context& ctx, const Config& cfg, const MetricsOptions& o) {
  const std::string path = o.textfile + "/gpufrac.prom";
  for (;;) {
    auto text = collect(cfg);
    auto written = text ? fs::write_file_atomic(path, *text, 0644) : Result<>(std::unexpected(text.error()));
    if (!written && o.interval == 0) return ctx.fail(written.error());
    if (!written) std::fprintf(stderr, "gpufrac: metrics: %s\n", written.error().message.c_str());
    if (o.interval == 0) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
  }
}

int print_once(Context& ctx, const Config& cfg) {
  auto text = collect(cfg);
  if (!text) return ctx.fail(text.error());
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}

int run_metrics(Context& ctx, const MetricsOptions& o) {
  auto cfg = ctx.load();
  if (!cfg) return ctx.fail(cfg.error());
  if (o.once) return print_once(ctx, *cfg);
  if (o.textfile.empty()) return serve(ctx, *cfg, o.listen);
  if (!fs::exists(o.textfile))
    return ctx.fail(user_error("--textfile: " + text::quote(o.textfile) +
                               " does not exist; give node_exporter's --collector.textfile.directory")
                        .error());
  return write_textfile(ctx, *cfg, o);
}

}  // namespace

void add_metrics_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("metrics", "Serve Prometheus metrics (GPU memory, shares, refusals, latency)");
  auto o = std::make_shared<MetricsOptions>();
  auto* listen = cmd->add_option("--listen", o->listen, "Serve /metrics over HTTP at HOST:PORT, [IPV6]:PORT or :PORT")
                     ->capture_default_str();
  auto* textfile = cmd->add_option("--textfile", o->textfile,
                                   "Write DIR/gpufrac.prom for node_exporter's textfile collector instead")
                       ->type_name("DIR")
                       ->excludes(listen);
  auto* interval =
      cmd->add_option("--interval", o->interval, "With --textfile: rewrite it every SECONDS (default: once)")
          ->type_name("SECONDS")
          ->check(CLI::Range(0.1, 86400.0))
          ->needs(textfile);
  cmd->add_flag("--once", o->once, "Print one scrape on stdout and exit (no server)")
      ->excludes(listen)
      ->excludes(textfile)
      ->excludes(interval);
  cmd->callback([&ctx, o] { ctx.exit_code = run_metrics(ctx, *o); });
}

}  // namespace gpufrac::cli
