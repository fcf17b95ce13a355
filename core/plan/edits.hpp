// Edits: what a container gets, in the shape of CDI containerEdits. The planner produces one value;
// the hook applies it in the container's mount namespace, the runtime wrapper writes it into
// config.json, and `gpufrac cdi generate` prints it. Never compute those three separately.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gpufrac {

struct EditDeviceNode {
  std::string path;       // inside the container, e.g. /dev/nvidia0
  std::string host_path;  // on the host (under host-root); empty = same as path
  char type = 'c';
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::optional<std::uint32_t> file_mode;  // e.g. 0666
  std::string permissions = "rw";          // cgroup access
  bool operator==(const EditDeviceNode&) const = default;
};

struct EditMount {
  std::string host_path;
  std::string container_path;
  std::string type;                  // "" or "bind" for bind mounts, "tmpfs" for a fresh tmpfs
  std::vector<std::string> options;  // e.g. {"ro", "nosuid", "nodev", "bind"}
  bool operator==(const EditMount&) const = default;
};

struct EditHook {
  std::string hook_name;          // createRuntime, poststop, ...
  std::string path;               // absolute host path
  std::vector<std::string> args;  // including argv[0]
  std::vector<std::string> env;   // always explicit: a hook must not inherit the runtime's env
  std::optional<int> timeout;
  bool operator==(const EditHook&) const = default;
};

struct Edits {
  std::vector<std::string> env;  // "KEY=VALUE"
  std::vector<EditDeviceNode> device_nodes;
  std::vector<EditMount> mounts;
  std::vector<EditHook> hooks;

  bool empty() const { return env.empty() && device_nodes.empty() && mounts.empty() && hooks.empty(); }
  // Appends other's entries, skipping exact duplicates and device nodes already present by path.
  void merge(const Edits& other);
  bool operator==(const Edits&) const = default;
};

// CDI containerEdits JSON with the exact keys of the CDI spec (deviceNodes, hostPath, hookName,
// containerPath, fileMode as a decimal integer). Empty lists and unset optionals are omitted.
nlohmann::json to_cdi_json(const Edits& e);

}  // namespace gpufrac
