// Device-cgroup access for the nodes the hook mounts. An OCI hook cannot change a cgroup v2 BPF
// device program that the runtime owns, so: if the spec's own rules already allow a node nothing is
// done; on cgroup v1 the hook appends "c M:m rw" to devices.allow; on a v2-only host the container is
// refused with a message naming the CDI and runtime-wrapper paths (never start a container that
// cannot open its GPU).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"
#include "core/plan/edits.hpp"

namespace gpufrac::hook {

// OCI linux.resources.devices semantics: the last matching rule decides; no rule = denied.
bool spec_allows_device(const nlohmann::json& device_rules, char type, std::int64_t major, std::int64_t minor,
                        std::string_view access);

// The v1 devices controller path of a process ("/machine/abc"), or nullopt on a v2-only host.
Result<std::optional<std::string>> devices_cgroup_v1(const std::string& proc_root, pid_t pid);

// Grants the nodes not already allowed by `device_rules` to the process's cgroup.
Result<> allow_devices(const std::string& proc_root, const std::string& cgroup_root, pid_t pid,
                       const nlohmann::json& device_rules, const std::vector<EditDeviceNode>& nodes);

}  // namespace gpufrac::hook
