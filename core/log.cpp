#include "core/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>
#include <syslog.h>

#include "core/fs.hpp"

namespace gpufrac::log {

namespace {

std::shared_ptr<spdlog::logger> g_logger;
std::string g_context;
bool g_on_stderr = false;

spdlog::level::level_enum to_spdlog(const std::string& level) {
  if (level == "debug") return spdlog::level::debug;
  if (level == "warn") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger> make_logger(const LogConfig& cfg, const std::string& name) {
  try {
    if (cfg.target == LogTarget::journal) return spdlog::syslog_logger_mt(name, name, LOG_PID, LOG_DAEMON, false);
    if (cfg.target == LogTarget::file) {
      (void)fs::make_dirs(fs::dirname(cfg.file), 0755);
      return spdlog::basic_logger_mt(name, cfg.file);
    }
  } catch (const spdlog::spdlog_ex& e) {
    g_on_stderr = true;
    auto fallback = spdlog::stderr_logger_mt(name + "-stderr");
    fallback->warn("gpufrac: cannot open log {}: {}; logging to stderr", cfg.file, e.what());
    return fallback;
  }
  g_on_stderr = true;
  return spdlog::stderr_logger_mt(name);
}

}  // namespace

void init(const LogConfig& cfg, std::string_view program) {
  spdlog::drop_all();
  g_on_stderr = false;
  g_logger = make_logger(cfg, std::string(program));
  g_logger->set_level(to_spdlog(cfg.level));
  g_logger->set_pattern(cfg.target == LogTarget::journal ? "%v" : "%Y-%m-%dT%H:%M:%S.%e %n[%P] %l: %v");
  g_logger->flush_on(spdlog::level::debug);
}

bool on_stderr() {
  return g_logger && g_on_stderr;
}

void set_context(std::string_view context) {
  g_context = std::string(context);
}

void write(Level level, std::string_view message) {
  if (!g_logger) return;
  auto lvl = level == Level::debug  ? spdlog::level::debug
             : level == Level::info ? spdlog::level::info
             : level == Level::warn ? spdlog::level::warn
                                    : spdlog::level::err;
  try {
    if (g_context.empty())
      g_logger->log(lvl, "{}", message);
    else
      g_logger->log(lvl, "[{}] {}", g_context, message);
  } catch (...) {
    // Logging never fails the caller.
  }
}

}  // namespace gpufrac::log
