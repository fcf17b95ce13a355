// `gpufrac runtime configure`: registering gpufrac-runtime as the runtime handler "gpufrac" with a
// container engine. Renderers are pure (file contents in, file contents out: plan_* below and in
// containerd.hpp); files.hpp reads the inputs and writes the plan (backup once, atomic replace).
//
//   containerd  drop-in <dir of config>/conf.d/99-gpufrac.toml + the imports line in config.toml
//   docker      daemon.json: runtimes.gpufrac = {path, runtimeArgs: []}, other keys kept
//   crio        drop-in <dir of config>/crio.conf.d/99-gpufrac.toml
//   podman      drop-in <dir of config>/containers.conf.d/99-gpufrac.conf: engine.runtimes.gpufrac and
//               hooks_dir (with /usr/share/containers/oci/hooks.d, the only one podman 4.3.1 reads
//               by default)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::engine_config {

enum class Engine { containerd, docker, crio, podman };
std::optional<Engine> engine_from(std::string_view name);
const char* to_string(Engine e);

inline constexpr const char* kRuntimeName = "gpufrac";
inline constexpr const char* kBackupSuffix = ".gpufrac.bak";

// The annotations the handler passes from pods to containers (containerd pod_annotations, CRI-O
// allowed_annotations): gpufrac's keys and the compatibility aliases.
std::vector<std::string> pod_annotations();
// Container annotations containerd passes (the same plus CDI device annotations).
std::vector<std::string> container_annotations();
// podman's hooks directories: the packaged one first (where gpufrac's hooks.d files go), then /etc.
std::vector<std::string> podman_hooks_dirs();

std::string default_config_path(Engine e);
// The drop-in next to the main config: containerd conf.d/99-gpufrac.toml, crio
// crio.conf.d/99-gpufrac.toml, podman containers.conf.d/99-gpufrac.conf; docker has none ("").
std::string default_drop_in_path(Engine e, const std::string& config_path);

// One file's content before (nullopt: it does not exist) and after.
struct SourceFile {
  std::string path;
  std::optional<std::string> text;
};

struct FileChange {
  std::string path;
  std::optional<std::string> before;
  std::string after;
  bool changed() const { return !before || *before != after; }
};

struct Plan {
  std::vector<FileChange> files;      // in writing order
  std::string reload;                 // how the engine picks the change up
  std::vector<std::string> warnings;  // one line each: what the plan cannot do and what to do instead
};

// gpufrac_config: gpufrac's config file when it is not the default one; dockerd then passes it as
// runtimeArgs ["--gpufrac-config", FILE] (dockerd's own environment does not reach the runtime).
Result<Plan> plan_docker(const SourceFile& daemon_json, const std::string& runtime_path,
                         const std::string& gpufrac_config = "");
Result<Plan> plan_crio(const SourceFile& drop_in, const std::string& runtime_path);
// main_conf: the containers.conf named by --engine-config (its hooks_dir, if set, is kept first).
Result<Plan> plan_podman(const SourceFile& main_conf, const SourceFile& drop_in, const std::string& runtime_path);

}  // namespace gpufrac::engine_config
