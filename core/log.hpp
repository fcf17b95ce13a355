// Logging for every program. One line per event, tagged with the program and, when known, the
// container id. Backed by spdlog in log.cpp only (the static hook compiles that TU header-only).
#pragma once

#include <string>
#include <string_view>

#include "core/config/config.hpp"

namespace gpufrac::log {

enum class Level { debug, info, warn, error };

// Sets the sink from the config (file, journal via syslog, or stderr). Falls back to stderr with a
// warning if the log file cannot be opened: logging never fails a container.
void init(const LogConfig& cfg, std::string_view program);
// Adds a context tag to every later line, e.g. the container id.
void set_context(std::string_view context);
void write(Level level, std::string_view message);
// True when the log goes to stderr (log.target: stderr, or a log file that could not be opened): a
// program that also prints an error there says it once.
bool on_stderr();

inline void debug(std::string_view m) {
  write(Level::debug, m);
}
inline void info(std::string_view m) {
  write(Level::info, m);
}
inline void warn(std::string_view m) {
  write(Level::warn, m);
}
inline void error(std::string_view m) {
  write(Level::error, m);
}

}  // namespace gpufrac::log
