// Engine names, default paths, and the docker, CRI-O and podman renderers.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "engine-config/configure.hpp"
#include "engine-config/toml_lite.hpp"

namespace gpufrac::engine_config {

std::optional<Engine> engine_from(std::string_view name) {
  if (name == "containerd") return Engine::containerd;
  if (name == "docker") return Engine::docker;
  if (name == "crio" || name == "cri-o") return Engine::crio;
  if (name == "podman") return Engine::podman;
  return std::nullopt;
}

const char* to_string(Engine e) {
  switch (e) {
    case Engine::containerd:
      return "containerd";
    case Engine::docker:
      return "docker";
    case Engine::crio:
      return "crio";
    case Engine::podman:
      return "podman";
  }
  return "?";
}

std::vector<std::string> pod_annotations() {
  return {"gpufrac.io/*",       "gpu-fraction",    "gpu-memory", "clearml-injector/fraction",
          "gpu-fraction.limit", "gpu-memory.limit"};
}

std::vector<std::string> container_annotations() {
  auto out = pod_annotations();
  out.emplace_back("cdi.k8s.io/*");
  return out;
}

std::vector<std::string> podman_hooks_dirs() {
  return {"/usr/share/containers/oci/hooks.d", "/etc/containers/oci/hooks.d"};
}

std::string default_config_path(Engine e) {
  switch (e) {
    case Engine::containerd:
      return "/etc/containerd/config.toml";
    case Engine::docker:
      return "/etc/docker/daemon.json";
    case Engine::crio:
      return "/etc/crio/crio.conf";
    case Engine::podman:
      return "/etc/containers/containers.conf";
  }
  return "";
}

std::string default_drop_in_path(Engine e, const std::string& config_path) {
  const std::string dir = fs::dirname(config_path);
  switch (e) {
    case Engine::containerd:
      return dir + "/conf.d/99-gpufrac.toml";
    case Engine::crio:
      return dir + "/crio.conf.d/99-gpufrac.toml";
    case Engine::podman:
      return dir + "/containers.conf.d/99-gpufrac.conf";
    case Engine::docker:
      return "";
  }
  return "";
}

namespace {

using Json = nlohmann::ordered_json;

Result<Json> docker_object(const SourceFile& f) {
  if (!f.text) return Json::object();
  Json j = Json::parse(*f.text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return user_error(f.path + ": not a JSON object; fix it or move it away, then run the command again");
  if (j.contains("runtimes") && !j["runtimes"].is_object())
    return user_error(f.path + ": runtimes must be an object of {\"path\": ..., \"runtimeArgs\": [...]}");
  return j;
}

}  // namespace

Result<Plan> plan_docker(const SourceFile& daemon_json, const std::string& runtime_path,
                         const std::string& gpufrac_config) {
  auto j = docker_object(daemon_json);
  if (!j) return std::unexpected(j.error());
  Json args = Json::array();
  if (!gpufrac_config.empty()) args = {"--gpufrac-config", gpufrac_config};
  const Json wanted = {{"path", runtime_path}, {"runtimeArgs", args}};
  Plan plan;
  plan.reload = "reload dockerd to load it: systemctl reload docker (or kill -HUP the dockerd process)";
  if (j->contains("runtimes") && (*j)["runtimes"].contains(kRuntimeName) && (*j)["runtimes"][kRuntimeName] == wanted) {
    plan.files.push_back({daemon_json.path, daemon_json.text, *daemon_json.text});
    return plan;
  }
  (*j)["runtimes"][kRuntimeName] = wanted;
  try {
    plan.files.push_back({daemon_json.path, daemon_json.text, j->dump(4) + "\n"});
  } catch (const std::exception& e) {
    return user_error(daemon_json.path + ": " + e.what());
  }
  return plan;
}

Result<Plan> plan_crio(const SourceFile& drop_in, const std::string& runtime_path) {
  std::string text = text::cat(
      "# The runtime handler \"", kRuntimeName, "\" (gpufrac-runtime), written by `gpufrac runtime configure crio`.\n",
      "# CRI-O copies pod annotations into every container's spec; the list below names gpufrac's keys.\n",
      "[crio.runtime.runtimes.", kRuntimeName, "]\n", "runtime_path = ", toml::quote(runtime_path), "\n",
      "runtime_type = \"oci\"\n", "allowed_annotations = ", toml::string_array(pod_annotations()), "\n");
  return Plan{{{drop_in.path, drop_in.text, std::move(text)}}, "restart CRI-O to load it: systemctl restart crio"};
}

Result<Plan> plan_podman(const SourceFile& main_conf, const SourceFile& drop_in, const std::string& runtime_path) {
  std::vector<std::string> dirs;
  if (main_conf.text) {
    auto doc = toml::parse(*main_conf.text, main_conf.path);
    if (!doc) return std::unexpected(doc.error());
    for (const auto& s : *doc) {
      if (s.kind != toml::StatementKind::key_value || s.full() != toml::KeyPath{"engine", "hooks_dir"}) continue;
      auto list = toml::string_array_value(s.value);
      if (!list) return user_error(text::cat(main_conf.path, ":", s.line, ": hooks_dir must be a list of strings"));
      dirs = *list;
    }
  }
  for (const auto& d : podman_hooks_dirs())
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  std::string text = text::cat(
      "# The runtime \"", kRuntimeName, "\" (gpufrac-runtime), written by `gpufrac runtime configure podman`:\n",
      "# podman --runtime ", kRuntimeName, " run --pid=host --annotation gpufrac.io/fraction=0.25 ...\n",
      "# hooks_dir keeps the directory podman reads by default, where gpufrac's hooks.d files are installed.\n",
      "[engine]\n", "hooks_dir = ", toml::string_array(dirs), "\n", "\n[engine.runtimes]\n", kRuntimeName, " = ",
      toml::string_array({runtime_path}), "\n");
  return Plan{{{drop_in.path, drop_in.text, std::move(text)}}, "podman reads it at its next command"};
}

}  // namespace gpufrac::engine_config
