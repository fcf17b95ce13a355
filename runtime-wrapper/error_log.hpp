// How the wrapper reports a refusal. containerd's runc shim does not show the runtime's stderr: it
// reads the last error from the file given with --log (runc writes logrus lines there). So the one
// line goes to stderr (runc, podman, a terminal) and, when --log was given, into that file in the
// format --log-format asks for.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"
#include "runtime-wrapper/argv.hpp"

namespace gpufrac::wrapper {

// One log line as runc writes it: json -> {"level":"error","msg":"...","time":"..."}; anything else
// (text, the default) -> time="..." level=error msg="...". Ends with a newline.
std::string render_log_line(std::string_view format, std::string_view message, std::string_view time);

// Prints "gpufrac: <message>" on stderr, appends it to --log, and returns the exit code.
int report_error(const RuntimeArgs& args, const Error& e);

}  // namespace gpufrac::wrapper
