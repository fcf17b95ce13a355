#include "runtime-wrapper/warnings.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/log.hpp"
#include "core/request/env_request.hpp"
#include "core/request/request.hpp"
#include "core/text.hpp"

namespace gpufrac::wrapper {

namespace {

constexpr std::size_t kMaxDockerConfigBytes = 4u << 20;

bool looks_like_request(std::string_view key) {
  return key.starts_with(annotation::kPrefix) || key.starts_with(env_request::kPrefix);
}

// A label's value as the suggestion shows it: itself when short and plain, else VALUE.
std::string shown_value(const nlohmann::json& value) {
  if (!value.is_string()) return "VALUE";
  const auto& v = value.get_ref<const std::string&>();
  const bool plain =
      !v.empty() && v.size() <= 32 &&
      v.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-_") == std::string::npos;
  return plain ? v : "VALUE";
}

}  // namespace

void warn(const std::string& message) {
  if (!log::on_stderr()) log::warn(message);
  std::fprintf(stderr, "gpufrac-runtime: warning: %s\n", message.c_str());
}

std::string docker_container_dir(std::string_view config_json, std::string_view container_id) {
  if (container_id.empty()) return "";
  const std::string tail = text::cat("/containers/", container_id, "/hostname\"");
  const auto end = config_json.find(tail);
  if (end == std::string_view::npos) return "";
  const auto open = config_json.rfind('"', end);
  if (open == std::string_view::npos) return "";
  // The JSON string from its opening quote to "/containers/<id>": a plain absolute path, no escape.
  const std::size_t dir_end = end + tail.size() - std::string_view("/hostname\"").size();
  const std::string_view dir = config_json.substr(open + 1, dir_end - open - 1);
  if (!dir.starts_with("/") || dir.find('\\') != std::string_view::npos || dir.find("/../") != std::string_view::npos)
    return "";
  return std::string(dir);
}

std::vector<std::string> docker_label_warnings(std::string_view config_v2_json) {
  std::vector<std::string> out;
  if (config_v2_json.find(annotation::kPrefix) == std::string_view::npos &&
      config_v2_json.find(env_request::kPrefix) == std::string_view::npos)
    return out;
  auto doc = nlohmann::json::parse(config_v2_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("Config") || !doc["Config"].is_object()) return out;
  const auto& config = doc["Config"];
  if (!config.contains("Labels") || !config["Labels"].is_object()) return out;
  for (const auto& [key, value] : config["Labels"].items()) {
    if (!looks_like_request(key)) continue;
    out.push_back(text::cat("label ", text::quote(key), " is not a request: Docker does not pass labels to the ",
                            "runtime; use -e ", env_name_for(key), "=", shown_value(value),
                            " (Docker 20.10+) or --annotation (Docker 24+)"));
  }
  return out;
}

std::vector<std::string> docker_label_warnings_for(std::string_view config_json, std::string_view container_id) {
  const std::string dir = docker_container_dir(config_json, container_id);
  if (dir.empty()) return {};
  auto text = fs::read_file(dir + "/config.v2.json", kMaxDockerConfigBytes);
  if (!text) return {};  // not Docker's after all, or unreadable: nothing to say
  return docker_label_warnings(*text);
}

}  // namespace gpufrac::wrapper
