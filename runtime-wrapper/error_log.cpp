#include "runtime-wrapper/error_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"

namespace gpufrac::wrapper {

namespace {

std::string now_rfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// logrus text values: quoted, with " and \ escaped (the message is one line already).
std::string logfmt_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

std::string render_log_line(std::string_view format, std::string_view message, std::string_view time) {
  if (format == "json") {
    nlohmann::ordered_json j = {{"level", "error"}, {"msg", message}, {"time", time}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return "time=" + logfmt_quote(time) + " level=error msg=" + logfmt_quote(message) + "\n";
}

int report_error(const RuntimeArgs& args, const Error& e) {
  const std::string message = "gpufrac: " + e.message;
  std::fprintf(stderr, "%s\n", message.c_str());
  if (!args.log_path.empty()) {
    fs::UniqueFd fd(::open(args.log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
    if (fd) (void)fs::write_all(fd.get(), render_log_line(args.log_format, message, now_rfc3339()), args.log_path);
  }
  return e.exit_code();
}

}  // namespace gpufrac::wrapper
