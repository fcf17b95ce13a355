// Requests the wrapper cannot honour but can recognise, answered with a warning instead of silence:
// GPUFRAC_* variables that are not request variables and gpufrac.io/... set as a variable
// (core/request/env_request.hpp), and Docker labels named like gpufrac's annotations. Docker keeps labels
// out of the OCI spec; it bind-mounts /etc/hostname from <data-root>/containers/<id>/hostname, and
// next to that file is its config.v2.json with Config.Labels, which is read (bounded) only when a
// spec mounts such a file for this very container id.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.hpp"

namespace gpufrac::wrapper {

// One line in gpufrac's log and on stderr: "gpufrac-runtime: warning: <message>".
void warn(const std::string& message);

// The directory <data-root>/containers/<id> when config.json binds /etc/hostname from a file
// there (Docker); "" otherwise.
std::string docker_container_dir(std::string_view config_json, std::string_view container_id);

// One line per label of Docker's config.v2.json that looks like a gpufrac request.
std::vector<std::string> docker_label_warnings(std::string_view config_v2_json);

// Both of the above for one create: reads <dir>/config.v2.json (at most 4 MiB) when there is one.
std::vector<std::string> docker_label_warnings_for(std::string_view config_json, std::string_view container_id);

}  // namespace gpufrac::wrapper
